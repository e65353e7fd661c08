import type { ServerResponse } from "node:http";
import type { TokenCounter } from "@almanac/core";
import { sendJson, sleep } from "./http-io.js";
import { defaultErrorKind, type EmbeddingStep, openAIErrorBody, type ScriptStep } from "./script.js";
import { completionBody, createWireId, emptyChoicesBody, resolveReply } from "./scripted-llm-reply.js";
import { emptyChoicesChunks, replyChunks, SSE_BROKEN, SSE_DONE, sseData } from "./scripted-llm-sse.js";
import type { AcceptedChat } from "./scripted-llm-validation.js";

/** What {@link writeChatStep} needs to answer one request. */
export interface StepContext {
  /** The validated chat request; absent for embeddings requests. */
  readonly accepted?: AcceptedChat;
  readonly counter: TokenCounter;
  readonly response: ServerResponse;
  /** Aborts when the client goes away or the server closes. */
  readonly signal: AbortSignal;
}

function startEventStream(response: ServerResponse): void {
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
}

async function writeEvents(
  response: ServerResponse,
  events: readonly string[],
  chunkDelayMs: number,
  signal: AbortSignal,
): Promise<void> {
  startEventStream(response);
  for (const [index, event] of events.entries()) {
    if (signal.aborted) return;
    if (index > 0 && chunkDelayMs > 0) await sleep(chunkDelayMs, signal);
    if (signal.aborted) return;
    response.write(event);
  }
  response.end();
}

/** Waits until the request is cut (client abort or server close), answering nothing. */
function hang(context: StepContext): Promise<void> {
  return new Promise((resolve) => {
    if (context.signal.aborted) resolve();
    else context.signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/**
 * Answers one request according to a script step: a completion (streamed as SSE when the
 * request asked for it), an HTTP error, a malformed body, no choices, or nothing at all.
 */
export async function writeChatStep(step: ScriptStep | EmbeddingStep, context: StepContext): Promise<void> {
  const { response, signal, accepted, counter } = context;
  await sleep(step.delayMs ?? 0, signal);
  if (signal.aborted) return;
  const streaming = accepted?.body.stream === true;
  const includeUsage = accepted?.body.stream_options?.include_usage === true;
  const model = accepted?.body.model ?? "";
  const chunkDelayMs = "chunkDelayMs" in step ? (step.chunkDelayMs ?? 0) : 0;
  switch (step.type) {
    case "hang":
      await hang(context);
      return;
    case "error": {
      const kind = defaultErrorKind(step.status);
      const body = step.body ?? openAIErrorBody(`scripted error ${step.status}`, kind.type, kind.code);
      sendJson(response, step.status, body, step.headers ?? {});
      return;
    }
    case "malformed":
      if (streaming) {
        await writeEvents(response, [SSE_BROKEN, SSE_DONE], 0, signal);
      } else {
        response.writeHead(200, { "content-type": "application/json" });
        response.end('{"id":"chatcmpl-broken","object":"chat.completion","choices":[{');
      }
      return;
    case "empty_choices": {
      const prompt = step.usage?.prompt_tokens ?? accepted?.promptTokens ?? 0;
      const completion = step.usage?.completion_tokens ?? 0;
      const usage = {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
      };
      if (streaming) {
        const head = { id: createWireId("chatcmpl-"), created: Math.floor(Date.now() / 1000), model };
        await writeEvents(response, [...emptyChoicesChunks(head, usage).map(sseData), SSE_DONE], 0, signal);
      } else {
        sendJson(response, 200, emptyChoicesBody(model, usage));
      }
      return;
    }
    case "text":
    case "tool_calls": {
      const reply = resolveReply(step, { model, promptTokens: accepted?.promptTokens ?? 0, counter });
      if (streaming) {
        const events = [...replyChunks(reply, { includeUsage }).map(sseData), SSE_DONE];
        await writeEvents(response, events, chunkDelayMs, signal);
      } else {
        sendJson(response, 200, completionBody(reply));
      }
      return;
    }
  }
}
