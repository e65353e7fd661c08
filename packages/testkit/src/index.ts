export { testErrorCodes } from "./error-codes.js";
export { type FakeProxy, type FakeProxyOptions, type ProxiedRequest, startFakeProxy } from "./fake-proxy.js";
export {
  createRecordingLogger,
  type LogEntry,
  type LogLevel,
  type RecordingLoggerOptions,
} from "./recording-logger.js";
export {
  type EmbeddingStep,
  type EmptyChoicesStep,
  type ErrorStep,
  type ErrorStepOptions,
  type HangStep,
  type MalformedStep,
  type ReplyOptions,
  type ScriptedToolCall,
  type ScriptStep,
  type StepTiming,
  type StepUsage,
  script,
  type TextStep,
  type ToolCallsStep,
} from "./script.js";
export { deterministicEmbedding, encodeFloat32Base64 } from "./scripted-embeddings.js";
export {
  DEFAULT_CONTEXT_WINDOW,
  type ScriptedLlm,
  type ScriptedLlmOptions,
  type ScriptFallback,
  startScriptedLlm,
} from "./scripted-llm.js";
export type {
  RecordedChatMessage,
  RecordedChatRequest,
  RecordedRequest,
  RecordedToolCall,
} from "./scripted-llm-records.js";
export { lastUserText, recordedText } from "./scripted-llm-records.js";
export type { RecordedTranscription, TranscriptionStep } from "./scripted-llm-transcriptions.js";
export type { ChatRejection } from "./scripted-llm-validation.js";
export { fillDisk, mountSmallFileSystem, type SmallFileSystem } from "./small-file-system.js";
