import {
  type ChatModel,
  describeError,
  InternalError,
  type Logger,
  type Message,
  messageText,
  ProviderError,
  type TokenCounter,
  type ToolCallBlock,
} from "@almanac/core";
import { z } from "zod";
import { cutMiddle } from "./cheap-passes.js";
import { buildStaticSummary } from "./static-summary.js";
import {
  buildSummaryRequest,
  renderForSummary,
  summaryInstructions,
  summaryTextSchema,
} from "./summary-prompt.js";

/** Which link of the fallback chain wrote the summary: the compaction model, the main model, or no model. */
export type SummaryPath = "model" | "fallback" | "static";

/** Models and limits of {@link summarizeMessages}. */
export interface SummarizeOptions {
  readonly counter: TokenCounter;
  readonly summaryModel: ChatModel;
  /** Tried once when the summary model fails; then the static summary. */
  readonly fallbackModel: ChatModel | undefined;
  /** Output tokens asked for (`maxOutputTokens`); also the static summary's size limit. */
  readonly maxOutputTokens: number;
  /** Most tokens (our count) one request's messages may have, so prompt + output fit every model's window. */
  readonly inputBudget: number;
  /** Per-request timeout of a summary call; the model's own default when absent. */
  readonly timeoutMs: number | undefined;
  /** Longest rendering of one message, in characters, before it is cut in the middle. */
  readonly renderMaxChars: number;
  readonly logger: Logger;
  readonly signal?: AbortSignal | undefined;
}

/** What to summarize. */
export interface SummarizeInput {
  readonly previousSummary: string | undefined;
  readonly messages: readonly Message[];
  readonly turnPrefix: readonly Message[];
  readonly calls: ReadonlyMap<string, ToolCallBlock>;
  readonly focus?: string | undefined;
}

/** The merged summary and how it was made. */
export interface SummaryOutcome {
  readonly text: string;
  readonly path: SummaryPath;
  /** Model requests made (failed ones included). */
  readonly llmCalls: number;
  /** Requests the material was split into (1 when it fit in one). */
  readonly chunks: number;
  /** Why each failed attempt failed, in order. */
  readonly failures: readonly string[];
}

interface Item {
  readonly message: Message;
  readonly inPrefix: boolean;
  readonly text: string;
  readonly tokens: number;
}

/** Room left for messages in one request, after instructions, the running summary and some slack. */
function materialRoom(input: SummarizeInput, options: SummarizeOptions): number {
  const { counter } = options;
  const instructions = counter.countText(summaryInstructions(input.turnPrefix.length > 0));
  const previous = counter.countText(input.previousSummary ?? "");
  // From the second chunk on, the running summary is the previous one: up to a full answer long.
  const running = Math.max(previous, options.maxOutputTokens);
  const focus = counter.countText(input.focus ?? "");
  return options.inputBudget - instructions - running - focus - 64;
}

/** Packs the rendered messages into chunks that each fit `room`, in order; a single oversized message is cut. */
function chunkItems(input: SummarizeInput, options: SummarizeOptions, room: number): Item[][] {
  const { counter } = options;
  const all = [
    ...input.messages.map((message) => ({ message, inPrefix: false })),
    ...input.turnPrefix.map((message) => ({ message, inPrefix: true })),
  ];
  const texts = renderForSummary(
    all.map((entry) => entry.message),
    input.calls,
    options.renderMaxChars,
  );
  const chunks: Item[][] = [];
  let current: Item[] = [];
  let used = 0;
  for (const [index, entry] of all.entries()) {
    let text = texts[index] ?? "";
    let tokens = counter.countText(text) + 2;
    if (tokens > room) {
      text = cutMiddle(text, Math.floor((text.length * room * 0.9) / tokens));
      tokens = counter.countText(text) + 2;
    }
    if (current.length > 0 && used + tokens > room) {
      chunks.push(current);
      current = [];
      used = 0;
    }
    current.push({ ...entry, text, tokens });
    used += tokens;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

async function requestSummary(
  model: ChatModel,
  chunk: readonly Item[],
  previousSummary: string | undefined,
  focus: string | undefined,
  options: SummarizeOptions,
): Promise<string> {
  const turnPrefix = chunk.filter((item) => item.inPrefix).map((item) => item.text);
  const response = await model.complete({
    messages: buildSummaryRequest({
      previousSummary,
      messages: chunk.filter((item) => !item.inPrefix).map((item) => item.text),
      turnPrefix,
      ...(focus === undefined ? {} : { focus }),
    }),
    maxOutputTokens: options.maxOutputTokens,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const parsed = summaryTextSchema(turnPrefix.length > 0).safeParse(messageText(response.message));
  if (!parsed.success) {
    throw new ProviderError(
      "compaction.summary_invalid",
      `Model ${model.modelName} returned an unusable summary: ${z.prettifyError(parsed.error)}`,
      { isRetryable: false, cause: parsed.error },
    );
  }
  return parsed.data;
}

/**
 * Folds messages into the rolling summary: the summary model first, one retry on the fallback model, then
 * the static summary, which cannot fail. Material too big for one request is summarized in chunks, each
 * merged into the summary of the ones before. Cancellation (the signal) stops the chain and throws.
 */
export async function summarizeMessages(
  input: SummarizeInput,
  options: SummarizeOptions,
): Promise<SummaryOutcome> {
  if (input.messages.length + input.turnPrefix.length === 0) {
    throw new InternalError(
      "compaction.nothing_to_summarize",
      "summarizeMessages was called without messages.",
    );
  }
  const room = materialRoom(input, options);
  const models = [
    options.summaryModel,
    ...(options.fallbackModel === undefined ? [] : [options.fallbackModel]),
  ];
  const failures: string[] = [];
  let stage = room < 200 ? models.length : 0; // no room for any material: only the static summary fits
  if (stage > 0) failures.push(`no room for material in a summary request (${room} tokens)`);
  const chunks = stage === 0 ? chunkItems(input, options, room) : [];
  let running = input.previousSummary;
  let llmCalls = 0;
  let done = 0;

  for (const chunk of chunks) {
    while (stage < models.length) {
      const model = models[stage] as ChatModel;
      llmCalls += 1;
      try {
        running = await requestSummary(model, chunk, running, input.focus, options);
        break;
      } catch (error) {
        if (options.signal?.aborted) throw error;
        failures.push(`${model.modelName}: ${describeError(error)}`);
        options.logger.warn({ model: model.modelName, error: describeError(error) }, "summary call failed");
        stage += 1;
      }
    }
    if (stage >= models.length) break;
    done += 1;
  }

  if (stage >= models.length) {
    // Everything not folded in by a model yet goes into one static summary.
    const remaining = chunks.slice(done).flat();
    const staticInput = {
      previousSummary: running,
      messages:
        chunks.length === 0
          ? input.messages
          : remaining.filter((item) => !item.inPrefix).map((item) => item.message),
      turnPrefix:
        chunks.length === 0
          ? input.turnPrefix
          : remaining.filter((item) => item.inPrefix).map((item) => item.message),
      calls: input.calls,
      counter: options.counter,
      maxTokens: options.maxOutputTokens,
    };
    return {
      text: buildStaticSummary(staticInput),
      path: "static",
      llmCalls,
      chunks: Math.max(chunks.length, 1),
      failures,
    };
  }
  return {
    text: running ?? "",
    path: stage === 0 ? "model" : "fallback",
    llmCalls,
    chunks: chunks.length,
    failures,
  };
}
