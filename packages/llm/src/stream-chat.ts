import {
  type AlmanacError,
  type ChatRequest,
  type ChatResponse,
  type ChatStreamEvent,
  linkAbortSignals,
} from "@almanac/core";
import type { Stream } from "openai/core/streaming";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { classifyError, type ErrorContext } from "./classify-error.js";
import { jsonContentType } from "./convert-request.js";
import { ModelError } from "./model-error.js";
import type { ResolvedEndpoint } from "./resolve-endpoint.js";
import { type RetryInfo, retryDelayMs } from "./retry.js";
import { createStreamAssembler } from "./stream-assembler.js";

/** What a chat call reports to its model: retries, the outcome, and the context for errors. */
export interface ChatCallHooks {
  errorContext(request: ChatRequest, timedOut?: boolean): ErrorContext;
  onRetry(info: RetryInfo): void;
  onSuccess(response: ChatResponse, startedMs: number): void;
  onFailure(error: AlmanacError): void;
  now(): number;
}

/** Inputs of {@link streamChat}. */
export interface StreamChatOptions {
  readonly endpoint: ResolvedEndpoint;
  /** The request body as JSON, `stream: true` in it (convert-request's `toChatCompletionJson`). */
  readonly body: string;
  readonly request: ChatRequest;
  readonly timeoutMs: number;
  readonly hooks: ChatCallHooks;
}

/**
 * Streams one chat call. A failure before the first delta was yielded is retried (with a `retry`
 * event); after that it is thrown, because the consumer has already shown part of the answer.
 */
export async function* streamChat(
  options: StreamChatOptions,
): AsyncGenerator<ChatStreamEvent, void, undefined> {
  const { endpoint, body, request, timeoutMs, hooks } = options;
  const startedMs = hooks.now();
  for (let attempt = 1; ; attempt += 1) {
    let yieldedDelta = false;
    let failure: AlmanacError;
    const attemptSignal = linkAbortSignals([request.signal], timeoutMs);
    try {
      const stream = await (await endpoint.client()).post<Stream<ChatCompletionChunk>>("/chat/completions", {
        body,
        headers: jsonContentType,
        stream: true,
        signal: attemptSignal.signal,
        timeout: timeoutMs,
      });
      const assembler = createStreamAssembler(hooks.errorContext(request));
      attemptSignal.restartTimer();
      for await (const chunk of stream) {
        attemptSignal.restartTimer();
        for (const event of assembler.push(chunk)) {
          yieldedDelta = true;
          yield event;
        }
      }
      // The SDK ends a stream quietly when its signal aborts; that is a failure, not an answer.
      if (attemptSignal.signal.aborted) throw attemptSignal.signal.reason;
      const response = assembler.finish(attempt);
      hooks.onSuccess(response, startedMs);
      yield { type: "finish", response };
      return;
    } catch (error) {
      failure = classifyError(error, hooks.errorContext(request, attemptSignal.timedOut()));
    } finally {
      attemptSignal.dispose();
    }

    const delayMs = yieldedDelta ? undefined : retryDelayMs(failure, attempt, endpoint.policy);
    if (delayMs === undefined || !(failure instanceof ModelError)) {
      hooks.onFailure(failure);
      throw failure;
    }
    hooks.onRetry({ attempt, delayMs, error: failure });
    yield { type: "retry", attempt, delayMs, reason: failure.message };
    try {
      await endpoint.sleep(delayMs, request.signal);
    } catch (error) {
      const aborted = classifyError(error, hooks.errorContext(request));
      hooks.onFailure(aborted);
      throw aborted;
    }
  }
}
