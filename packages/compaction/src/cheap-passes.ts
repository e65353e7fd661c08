import {
  type ContentBlock,
  type Message,
  type TokenCounter,
  type ToolCallBlock,
  toolCallsOf,
  withContent,
  withMark,
} from "@almanac/core";
import { parseToolArguments, summarizeToolOutput, type ToolSummaryRegistry } from "./tool-summaries.js";

/** The cheap passes, in the order they run. */
export type CheapPassName = "giant-output-cut" | "dedupe" | "tool-summaries" | "argument-shortening";

/** What one pass did. */
export interface PassStats {
  readonly pass: CheapPassName;
  /** Messages whose content the pass changed. */
  readonly messages: number;
  /** Our-tokenizer tokens removed from those messages. */
  readonly tokensRemoved: number;
}

/** Size limits of the passes (tokens are our tokenizer's, before provider correction). */
export interface CheapPassLimits {
  /** Tool outputs shorter than this many characters are never deduplicated. */
  readonly dedupeMinChars: number;
  /** Old tool outputs above this many tokens become one-line summaries. */
  readonly toolOutputMaxTokens: number;
  /** String values in old tool-call arguments longer than this many characters are shortened. */
  readonly argumentMaxChars: number;
  /** Characters of a shortened argument string that are kept. */
  readonly argumentKeepChars: number;
  /** Tool outputs above this many tokens, recent ones included, are cut to head + tail. */
  readonly giantMinTokens: number;
  /** Roughly how many tokens of a giant output survive the cut. */
  readonly giantKeepTokens: number;
}

/** What the passes need to know besides the messages. */
export interface PassContext {
  readonly counter: TokenCounter;
  /** Every known tool call by id (to name the tool a result answers). */
  readonly calls: ReadonlyMap<string, ToolCallBlock>;
  readonly toolSummaries: ToolSummaryRegistry;
}

/** Messages after a pass, and its stats. */
export interface PassRun {
  readonly messages: readonly Message[];
  readonly stats: PassStats;
}

/** Maps every tool call in the messages by id. */
export function indexToolCalls(messages: readonly Message[]): Map<string, ToolCallBlock> {
  const calls = new Map<string, ToolCallBlock>();
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const call of toolCallsOf(message)) calls.set(call.id, call);
  }
  return calls;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** The first `count` UTF-16 units of `text`, never ending on half a surrogate pair. */
function head(text: string, count: number): string {
  const end = Math.max(0, Math.min(count, text.length));
  return end > 0 && isHighSurrogate(text.charCodeAt(end - 1)) ? text.slice(0, end - 1) : text.slice(0, end);
}

/** The last `count` UTF-16 units of `text`, never starting on half a surrogate pair. */
function tail(text: string, count: number): string {
  const start = Math.max(0, text.length - count);
  return start > 0 && isHighSurrogate(text.charCodeAt(start - 1)) ? text.slice(start + 1) : text.slice(start);
}

/** Head and tail of a text with a marker saying how much of the middle was cut. */
export function cutMiddle(text: string, keepChars: number): string {
  if (text.length <= keepChars) return text;
  const headChars = Math.ceil((keepChars * 2) / 3);
  const first = head(text, headChars);
  const last = tail(text, keepChars - headChars);
  const cut = text.length - first.length - last.length;
  return `${first}\n[… ${cut} of ${text.length} characters cut here to save context …]\n${last}`;
}

/**
 * Runs one pass: `rewrite` returns new blocks for a message or `undefined` to leave it. Changed messages keep
 * their id and get the `compressed` mark; the tokens removed are measured with the cached counter.
 */
function runPass(
  pass: CheapPassName,
  messages: readonly Message[],
  counter: TokenCounter,
  rewrite: (message: Message, index: number) => readonly ContentBlock[] | undefined,
): PassRun {
  let changed = 0;
  let tokensRemoved = 0;
  const result = messages.map((message, index) => {
    const content = rewrite(message, index);
    if (content === undefined) return message;
    const next = withMark(withContent(message, content), "compressed");
    changed += 1;
    tokensRemoved += counter.countMessage(message) - counter.countMessage(next);
    return next;
  });
  return { messages: changed === 0 ? messages : result, stats: { pass, messages: changed, tokensRemoved } };
}

/**
 * Tokens of one result. A tool message with a single result (the usual case) reuses the counter's cached
 * message count (3 framing tokens more than the text: harmless against thresholds in the hundreds).
 */
function resultTokens(counter: TokenCounter, message: Message, content: string): number {
  return message.content.length === 1 ? counter.countMessage(message) : counter.countText(content);
}

/** Rewrites the tool results of a tool message; `undefined` when none changed. */
function rewriteResults(
  message: Message,
  rewrite: (block: Extract<ContentBlock, { type: "tool_result" }>) => string | undefined,
): readonly ContentBlock[] | undefined {
  if (message.role !== "tool") return undefined;
  let changed = false;
  const content = message.content.map((block) => {
    if (block.type !== "tool_result") return block;
    const replacement = rewrite(block);
    if (replacement === undefined || replacement === block.content) return block;
    changed = true;
    return { ...block, content: replacement };
  });
  return changed ? content : undefined;
}

/**
 * Cuts every tool output above `giantMinTokens`, recent ones included, to head + tail with a marker.
 * The only pass allowed to touch the kept tail: one giant output must not be able to fill the window.
 */
export function cutGiantOutputs(
  messages: readonly Message[],
  context: PassContext,
  limits: CheapPassLimits,
): PassRun {
  const { counter } = context;
  return runPass("giant-output-cut", messages, counter, (message) => {
    if (message.role !== "tool" || counter.countMessage(message) <= limits.giantMinTokens) return undefined;
    return rewriteResults(message, (block) => {
      const tokens = resultTokens(counter, message, block.content);
      if (tokens <= limits.giantMinTokens) return undefined;
      const keepChars = Math.floor((block.content.length * limits.giantKeepTokens) / tokens);
      return cutMiddle(block.content, keepChars);
    });
  });
}

function deduplicate(
  messages: readonly Message[],
  isOld: (index: number) => boolean,
  context: PassContext,
  limits: CheapPassLimits,
): PassRun {
  // Newest occurrence of each long output wins; the walk goes backwards so the first one seen is the newest.
  const newest = new Map<string, string>();
  const pointers = new Map<string, string>();
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as Message;
    if (message.role !== "tool") continue;
    for (const block of message.content) {
      if (block.type !== "tool_result" || block.content.length < limits.dedupeMinChars) continue;
      const kept = newest.get(block.content);
      if (kept === undefined) newest.set(block.content, block.callId);
      else if (isOld(index)) pointers.set(block.callId, kept);
    }
  }
  return runPass("dedupe", messages, context.counter, (message, index) => {
    if (!isOld(index) || pointers.size === 0) return undefined;
    return rewriteResults(message, (block) => {
      const kept = pointers.get(block.callId);
      if (kept === undefined) return undefined;
      const name = context.calls.get(kept)?.name ?? "tool";
      return `[Identical to the later output of ${name} call ${kept}; this older copy was removed to save context]`;
    });
  });
}

function summarizeOldOutputs(
  messages: readonly Message[],
  isOld: (index: number) => boolean,
  context: PassContext,
  limits: CheapPassLimits,
): PassRun {
  const { counter } = context;
  return runPass("tool-summaries", messages, counter, (message, index) => {
    if (!isOld(index) || message.role !== "tool") return undefined;
    if (counter.countMessage(message) <= limits.toolOutputMaxTokens) return undefined;
    return rewriteResults(message, (block) => {
      if (resultTokens(counter, message, block.content) <= limits.toolOutputMaxTokens) return undefined;
      const call = context.calls.get(block.callId);
      return summarizeToolOutput(
        {
          name: call?.name ?? "unknown_tool",
          arguments: call === undefined ? undefined : parseToolArguments(call.arguments),
          content: block.content,
          isError: block.isError === true,
        },
        context.toolSummaries,
      );
    });
  });
}

/** Shortens long strings anywhere inside a JSON value; returns the same value when nothing was long. */
function shortenStrings(value: unknown, limits: CheapPassLimits): unknown {
  if (typeof value === "string") {
    if (value.length <= limits.argumentMaxChars) return value;
    const kept = head(value, limits.argumentKeepChars);
    return `${kept}… [shortened to save context: ${value.length - kept.length} of ${value.length} characters removed]`;
  }
  if (Array.isArray(value)) {
    const items = value.map((item) => shortenStrings(item, limits));
    return items.some((item, index) => item !== value[index]) ? items : value;
  }
  if (typeof value === "object" && value !== null) {
    let changed = false;
    const entries = Object.entries(value).map(([key, item]) => {
      const next = shortenStrings(item, limits);
      if (next !== item) changed = true;
      return [key, next] as const;
    });
    return changed ? Object.fromEntries(entries) : value;
  }
  return value;
}

function shortenOldArguments(
  messages: readonly Message[],
  isOld: (index: number) => boolean,
  context: PassContext,
  limits: CheapPassLimits,
): PassRun {
  return runPass("argument-shortening", messages, context.counter, (message, index) => {
    if (!isOld(index) || message.role !== "assistant") return undefined;
    let changed = false;
    const content = message.content.map((block) => {
      if (block.type !== "tool_call" || block.arguments.length <= limits.argumentMaxChars) return block;
      const parsed = parseToolArguments(block.arguments);
      // Arguments that are not JSON are left alone: shortening them could not keep them valid.
      if (parsed === undefined) return block;
      const shortened = shortenStrings(parsed, limits);
      if (shortened === parsed) return block;
      changed = true;
      return { ...block, arguments: JSON.stringify(shortened) };
    });
    return changed ? content : undefined;
  });
}

/**
 * The passes that only touch old messages (`isOld(index)`: outside the kept tail): duplicate outputs become
 * pointers to the newest copy, long outputs become one-line summaries, long argument strings are shortened
 * (arguments stay valid JSON). Ids never change; changed messages get the `compressed` mark.
 */
export function compressOldMessages(
  messages: readonly Message[],
  isOld: (index: number) => boolean,
  context: PassContext,
  limits: CheapPassLimits,
): { readonly messages: readonly Message[]; readonly stats: readonly PassStats[] } {
  const stats: PassStats[] = [];
  let current = messages;
  for (const pass of [deduplicate, summarizeOldOutputs, shortenOldArguments]) {
    const run = pass(current, isOld, context, limits);
    current = run.messages;
    stats.push(run.stats);
  }
  return { messages: current, stats };
}
