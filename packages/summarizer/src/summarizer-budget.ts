import type { BeforeModelCallContext } from "@almanac/agent";
import { createMessage, isAlmanacError, type Message, type TokenCounter, type ToolSpec } from "@almanac/core";
import { countToolTokens } from "@almanac/tokenizer";
import { SummarizerError } from "./summarizer-error.js";

/**
 * Tokens a provider adds to every chat request to prime the reply (OpenAI's published accounting),
 * on top of each message's own framing.
 */
const REPLY_PRIMING_TOKENS = 3;

/** How the summarizer's requests are sized for one model: everything derives from the window and the cap. */
export interface SummarizerBudget {
  readonly contextWindow: number;
  /** Output cap sent with every summarizer step. */
  readonly maxOutputTokens: number;
  /** `contextWindow − maxOutputTokens`: the most tokens one request's prompt may have. */
  readonly promptBudget: number;
}

/**
 * The summarizer's budget for a window: the configured output cap, but never more than a quarter of the
 * window (a merge writes a few bullets; the rest of the window is for the messages and the log).
 */
export function resolveSummarizerBudget(
  contextWindow: number,
  maxOutputTokens: number | undefined,
): SummarizerBudget {
  for (const [name, value] of [
    ["contextWindow", contextWindow],
    ["maxOutputTokens", maxOutputTokens ?? 1],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new SummarizerError(
        "summarizer.config_invalid",
        `createSummarizer: ${name} must be a whole number of tokens of at least 1 (got ${String(value)}).`,
      );
    }
  }
  const cap = Math.max(1, Math.min(maxOutputTokens ?? 4096, Math.floor(contextWindow / 4)));
  return { contextWindow, maxOutputTokens: cap, promptBudget: contextWindow - cap };
}

/** Tokens of one request as a provider counts it: system prompt, messages with framing, tool specs, priming. */
export function countRequest(
  counter: TokenCounter,
  systemPrompt: string,
  messages: readonly Message[],
  tools: readonly ToolSpec[],
): number {
  return (
    REPLY_PRIMING_TOKENS +
    counter.countMessage(createMessage({ role: "system", content: systemPrompt, timestamp: 0 })) +
    counter.countMessages(messages) +
    countToolTokens(counter, tools)
  );
}

/** How one pass's room is shared out, once the fixed part of the request is known. */
export interface PassRoom {
  /** Most tokens the `read_day_log` result may show (the tail of a longer log). */
  readonly logViewTokens: number;
  /** Most transcript tokens of this pass. */
  readonly partTokens: number;
}

/**
 * Shares out a pass's prompt budget. `fixedTokens` is the request without the day's messages (system
 * prompt, tools, the input's header and summary); `logTokens` the log as it is now. The log's view gets
 * at most 35 % of what is left, the agent's own steps (its write calls and their acknowledgements) a
 * reserve, the transcript the rest. Throws `summarizer.window_too_small` when nothing is left.
 */
export function passRoom(budget: SummarizerBudget, fixedTokens: number, logTokens: number): PassRoom {
  const free = budget.promptBudget - fixedTokens;
  const logViewTokens = Math.max(0, Math.floor(free * 0.35));
  // Plus the framing of the calls, the acknowledgements and the read's header line.
  const stepsReserve = Math.min(budget.maxOutputTokens, Math.floor(free * 0.15)) + 160;
  // The log grows while the day is merged; a view sized from today's log would be outgrown by the next read.
  const logShown = Math.min(logViewTokens, logTokens + Math.floor(free * 0.1) + 32);
  const partTokens = free - logShown - stepsReserve;
  if (partTokens < 64) {
    throw new SummarizerError(
      "summarizer.window_too_small",
      `The model's window (${budget.contextWindow} tokens, ${budget.maxOutputTokens} of them for the answer) leaves no room for messages after the summarizer's instructions and tools (${fixedTokens} tokens). Raise model.contextWindow or lower model.maxOutputTokens.`,
    );
  }
  return { logViewTokens, partTokens };
}

/** Thrown by the step guard when a summarizer step cannot be made to fit; handled like a provider overflow. */
export const STEP_TOO_LONG = "summarizer.step_too_long";

/** True for an overflow: the provider's `llm.context_length` or our own guard's, anywhere in the cause chain. */
export function isOverflowError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current !== undefined; depth += 1) {
    if (isAlmanacError(current) && (current.code === "llm.context_length" || current.code === STEP_TOO_LONG))
      return true;
    current = current instanceof Error ? current.cause : undefined;
  }
  return false;
}

const SUPERSEDED_READ =
  "[An earlier read of the log, left out to save room: call read_day_log for the current log.]";
const APPLIED_WRITE = JSON.stringify({ note: "[applied to the log; left out to save room]" });
const WRITE_TOOLS = new Set(["edit_day_log", "append_day_log", "rewrite_day_log"]);

/**
 * Lightens a summarizer conversation that grew too long: reads of the log older than the latest one are
 * replaced by a note (the log changed since; the latest read shows it), and the arguments of writes already
 * applied are replaced by a note (their text is in the log). Returns the same array when nothing changed.
 */
export function lightenConversation(messages: readonly Message[]): readonly Message[] {
  const readCalls = new Set<string>();
  const appliedWrites = new Set<string>();
  for (const message of messages) {
    for (const block of message.content) {
      if (block.type === "tool_call" && block.name === "read_day_log") readCalls.add(block.id);
      if (block.type === "tool_call" && WRITE_TOOLS.has(block.name)) appliedWrites.add(block.id);
    }
  }
  const lastRead = messages
    .flatMap((message) => message.content)
    .findLast((block) => block.type === "tool_result" && readCalls.has(block.callId));
  let changed = false;
  const lightened = messages.map((message): Message => {
    let touched = false;
    const content = message.content.map((block) => {
      if (block.type === "tool_result" && readCalls.has(block.callId) && block !== lastRead) {
        if (block.content === SUPERSEDED_READ) return block;
        touched = true;
        return { ...block, content: SUPERSEDED_READ };
      }
      if (block.type === "tool_call" && appliedWrites.has(block.id) && block.arguments !== APPLIED_WRITE) {
        touched = true;
        return { ...block, arguments: APPLIED_WRITE };
      }
      return block;
    });
    if (!touched) return message;
    changed = true;
    return Object.freeze({ ...message, content: Object.freeze(content) });
  });
  return changed ? lightened : messages;
}

/**
 * The summarizer agent's step before each model call: measures the next request; when it would not fit the prompt
 * budget, lightens the conversation; when it still would not fit, throws `summarizer.step_too_long`, which
 * the summarizer handles like a provider overflow (the part is split). No request it lets through overflows.
 */
export function createStepGuard(counter: TokenCounter, budget: SummarizerBudget) {
  return (context: BeforeModelCallContext): void => {
    const { memory, systemPrompt, tools } = context;
    const measure = () => countRequest(counter, systemPrompt, memory.activeMessages(), tools);
    if (measure() <= budget.promptBudget) return;
    const lightened = lightenConversation(memory.messages);
    if (lightened !== memory.messages) memory.replaceMessages(lightened);
    const tokens = measure();
    if (tokens > budget.promptBudget) {
      throw new SummarizerError(
        STEP_TOO_LONG,
        `A summarizer step would need ${tokens} prompt tokens; the window leaves ${budget.promptBudget}.`,
      );
    }
  };
}

/**
 * Cuts one rendered entry into pieces of at most `maxTokens` each (at line breaks or spaces where it can),
 * marking the continuations, so one long message never makes a pass overflow.
 */
export function splitEntry(entry: string, maxTokens: number, counter: TokenCounter): string[] {
  const pieces: string[] = [];
  let rest = entry;
  while (counter.countText(rest) > maxTokens) {
    let end = Math.max(1, Math.floor((rest.length * maxTokens) / counter.countText(rest)));
    while (end > 1 && counter.countText(rest.slice(0, end)) > maxTokens - 8) end = Math.floor(end * 0.9);
    const cut = Math.max(rest.lastIndexOf("\n", end), rest.lastIndexOf(" ", end));
    if (cut > end / 2) end = cut;
    pieces.push(rest.slice(0, end));
    rest = `(continued) ${rest.slice(end).trimStart()}`;
  }
  pieces.push(rest);
  return pieces;
}
