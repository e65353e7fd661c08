export { classifyError, type ErrorContext } from "./classify-error.js";
export { OUTPUT_CAP_PARAMETERS, type OutputCapParameter } from "./convert-request.js";
export {
  isModelError,
  isRetryableKind,
  llmErrorCodes,
  ModelError,
  type ModelErrorKind,
  type ModelErrorOptions,
} from "./model-error.js";
export { createModelFetch, type ProxySettings } from "./model-fetch.js";
export {
  createOpenAIChatModel,
  type OpenAIChatModel,
  type OpenAIChatModelConfig,
  type UsageReport,
} from "./openai-chat-model.js";
export { createOpenAIEmbedder, type OpenAIEmbedderConfig } from "./openai-embedder.js";
export {
  type AudioInput,
  createOpenAITranscriber,
  type OpenAITranscriberConfig,
  type TranscribeOptions,
  type Transcriber,
} from "./openai-transcriber.js";
export type { ImageResolver } from "./prepare-images.js";
export type { EndpointConfig } from "./resolve-endpoint.js";
export { abortableSleep, type RetryInfo, type RetryPolicy, retryDelayMs, type Sleep } from "./retry.js";
export { parseRetryAfterMs } from "./retry-after.js";
export type { UsageTotals } from "./usage-tracker.js";
