import {
  type AlmanacError,
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type ChatStreamEvent,
  linkAbortSignals,
  type Usage,
} from "@almanac/core";
import { classifyError, type ErrorContext } from "./classify-error.js";
import { jsonContentType, type OutputCapParameter, toChatCompletionJson } from "./convert-request.js";
import { parseChatCompletion } from "./convert-response.js";
import { isModelError } from "./model-error.js";
import { type ImageOptions, type ImageResolver, prepareImages } from "./prepare-images.js";
import { type EndpointConfig, integerAtLeast, resolveEndpoint } from "./resolve-endpoint.js";
import { type RetryInfo, withRetry } from "./retry.js";
import { type ChatCallHooks, streamChat } from "./stream-chat.js";
import { createUsageTracker, type UsageTotals } from "./usage-tracker.js";

/** One successful call's usage, for metrics. */
export interface UsageReport {
  /** The model the provider says answered. */
  readonly model: string;
  readonly usage: Usage;
  /** From the call's start to its end, retries and waits included. */
  readonly latencyMs: number;
  readonly attempts: number;
}

/** Configuration of {@link createOpenAIChatModel}. */
export interface OpenAIChatModelConfig extends EndpointConfig {
  /** Context window in tokens, when known (reported as `contextWindow`; not enforced here). */
  readonly contextWindow?: number;
  /** Send reasoning blocks back as `reasoning_content` (off by default; many providers reject it). */
  readonly includeReasoning?: boolean;
  /** Output cap of requests that set none (`maxOutputTokens`), so every request carries one. Default: none. */
  readonly maxOutputTokens?: number;
  /** Field that carries the output cap. Default `max_tokens`; see {@link OutputCapParameter}. */
  readonly outputCapParameter?: OutputCapParameter;
  /** Ask for a final usage chunk when streaming (`stream_options.include_usage`); default true. */
  readonly streamUsage?: boolean;
  /** Called after every successful call that reported usage. Errors it throws are logged and ignored. */
  readonly onUsage?: (report: UsageReport) => void;
  /** Clock for latency, in milliseconds; injectable for tests. */
  readonly now?: () => number;
  /**
   * False for a model that cannot see: image parts then travel as their text notes (`[image: inbox/…]`), so a
   * text-only server never gets one. Default true.
   */
  readonly vision?: boolean;
  /**
   * Turns an image reference of a message (`almanac-file:…`) into a `data:` URL while a request is built; the
   * bytes live only as long as that request. Without it such a reference travels as its text note.
   */
  readonly resolveImage?: ImageResolver;
}

/** A {@link ChatModel} on an OpenAI-compatible endpoint, with running usage totals. */
export interface OpenAIChatModel extends ChatModel {
  /** Totals since this model was created. */
  usageTotals(): UsageTotals;
}

/**
 * Creates a chat model on the official `openai` client. We own retries (exponential backoff with
 * full jitter, Retry-After honoured up to `maxRetryAfterMs`) and classify every failure as a `ModelError`.
 */
export function createOpenAIChatModel(config: OpenAIChatModelConfig): OpenAIChatModel {
  const endpoint = resolveEndpoint(config, "chat model");
  const contextWindow =
    config.contextWindow === undefined
      ? undefined
      : integerAtLeast(config.contextWindow, 0, 1, "contextWindow", "chat model");
  const bodyOptions = {
    model: endpoint.model,
    includeReasoning: config.includeReasoning ?? false,
    ...(config.outputCapParameter === undefined ? {} : { outputCapParameter: config.outputCapParameter }),
    ...(config.maxOutputTokens === undefined
      ? {}
      : {
          defaultMaxOutputTokens: integerAtLeast(
            config.maxOutputTokens,
            0,
            1,
            "maxOutputTokens",
            "chat model",
          ),
        }),
  };
  const now = config.now ?? Date.now;
  const imageOptions: ImageOptions = {
    vision: config.vision ?? true,
    ...(config.resolveImage === undefined ? {} : { resolveImage: config.resolveImage }),
  };
  /** The request with its image parts as this model takes them (see prepareImages). */
  const withImages = async (request: ChatRequest): Promise<ChatRequest> => {
    const messages = await prepareImages(request.messages, imageOptions, request.signal);
    return messages === request.messages ? request : { ...request, messages };
  };
  const tracker = createUsageTracker();
  const logger = endpoint.logger.child({ component: "llm", model: endpoint.model });

  const errorContext = (request: ChatRequest, timedOut = false): ErrorContext => ({
    operation: "chat",
    model: endpoint.model,
    baseURL: endpoint.baseURL,
    apiKey: endpoint.apiKey,
    timeoutMs: request.timeoutMs ?? endpoint.timeoutMs,
    callerSignal: request.signal,
    timedOut,
  });

  const hooks: ChatCallHooks = {
    errorContext,
    onRetry(info: RetryInfo) {
      tracker.recordRetry();
      logger.warn(
        {
          kind: info.error.kind,
          status: info.error.status,
          attempt: info.attempt,
          delayMs: info.delayMs,
          error: info.error.message,
        },
        "chat call failed; retrying",
      );
    },
    onSuccess(response: ChatResponse, startedMs: number) {
      tracker.recordSuccess(response.usage);
      if (response.usage === undefined || config.onUsage === undefined) return;
      try {
        config.onUsage({
          model: response.model,
          usage: response.usage,
          latencyMs: now() - startedMs,
          attempts: response.attempts,
        });
      } catch (error) {
        logger.warn({ error: String(error) }, "onUsage callback threw; ignored");
      }
    },
    onFailure(error: AlmanacError) {
      tracker.recordFailure();
      const fields = { code: error.code, error: error.message };
      if (isModelError(error, "aborted")) logger.debug(fields, "chat call aborted");
      else logger.warn(fields, "chat call failed");
    },
    now,
  };

  const timeoutOf = (request: ChatRequest): number =>
    request.timeoutMs === undefined
      ? endpoint.timeoutMs
      : integerAtLeast(Math.ceil(request.timeoutMs), 0, 1, "timeoutMs", "chat request");

  return {
    modelName: endpoint.model,
    contextWindow,
    usageTotals: () => tracker.totals(),

    async complete(request) {
      const startedMs = now();
      const timeoutMs = timeoutOf(request);
      const body = toChatCompletionJson(await withImages(request), bodyOptions);
      const attemptOnce = async (attempt: number): Promise<ChatResponse> => {
        const attemptSignal = linkAbortSignals([request.signal], timeoutMs);
        try {
          // The SDK's generic request with the body already JSON (see toChatCompletionJson): the same request
          // `chat.completions.create` makes, without serialising the whole history again.
          const raw: unknown = await (await endpoint.client()).post<unknown>("/chat/completions", {
            body,
            headers: jsonContentType,
            signal: attemptSignal.signal,
            timeout: timeoutMs,
          });
          return parseChatCompletion(raw, errorContext(request), attempt);
        } catch (error) {
          throw classifyError(error, errorContext(request, attemptSignal.timedOut()));
        } finally {
          attemptSignal.dispose();
        }
      };
      try {
        const { value: response } = await withRetry(attemptOnce, {
          policy: endpoint.policy,
          sleep: endpoint.sleep,
          signal: request.signal,
          classify: (error) => classifyError(error, errorContext(request)),
          onRetry: hooks.onRetry,
        });
        hooks.onSuccess(response, startedMs);
        return response;
      } catch (error) {
        const failure = classifyError(error, errorContext(request));
        hooks.onFailure(failure);
        throw failure;
      }
    },

    // A generator method, so even a bad request setting surfaces on iteration, like every other failure.
    async *stream(request): AsyncGenerator<ChatStreamEvent, void, undefined> {
      const body = toChatCompletionJson(await withImages(request), bodyOptions, {
        stream: true,
        ...((config.streamUsage ?? true) ? { stream_options: { include_usage: true } } : {}),
      });
      yield* streamChat({ endpoint, body, request, timeoutMs: timeoutOf(request), hooks });
    },
  };
}
