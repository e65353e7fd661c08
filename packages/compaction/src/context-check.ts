import { buildPrompt, type RollingSummary, systemPromptMessageId, type WorkingMemory } from "@almanac/agent";
import type { Message, TokenCounter, ToolSpec, Usage } from "@almanac/core";
import { countToolTokens } from "@almanac/tokenizer";

/** Name of the memory counter that holds the provider/our-count ratio (persisted with the session). */
export const tokenRatioCounter = "compaction.tokenRatio";

/**
 * Tokens a provider adds to every chat request to prime the reply (`<|start|>assistant<|message|>` in
 * OpenAI's published accounting), on top of each message's own framing.
 */
const REPLY_PRIMING_TOKENS = 3;

/** Weight of a new observation in the smoothed provider ratio: one odd report moves it half way. */
const RATIO_SMOOTHING = 0.5;

/** What one request would contain: exactly what the agent passes to `buildPrompt`, plus the tool specs. */
interface PromptParts {
  readonly systemPrompt: string;
  readonly summary: RollingSummary | undefined;
  /** The uncompacted messages, in order. */
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
}

/**
 * Counts the tokens of a would-be request with our tokenizer (no provider correction), the way providers
 * count a chat request: every message with its framing (core's counter), the tool specs as core's
 * `countToolTokens` counts them (their wire form; the strict scripted server uses the same rule), and the
 * reply priming.
 */
interface PromptMeter {
  count(parts: PromptParts): number;
}

/** How far the provider's count may be from ours before we stop believing it. */
export interface RatioBounds {
  readonly min: number;
  readonly max: number;
}

/** Default bounds of the provider/our-count ratio: a provider that reports half or double is believed, no more. */
export const defaultRatioBounds: RatioBounds = Object.freeze({ min: 0.5, max: 2 });

/** Tokens by text, per counter (counts depend on the encoding) and per kind of text, shared by every meter. */
const countsByCounter = new WeakMap<
  TokenCounter,
  { tools: Map<string, number>; system: Map<string, number> }
>();

/** Distinct texts remembered per counter and kind; the table is emptied when full. */
const SHARED_COUNTS = 64;

/**
 * The tokens of `text` from the table every meter of `counter` shares, counted (with `count`) when missing: one
 * copy of a few KB per distinct tool set or system prompt, not one per session. Sessions of one scope start
 * with the same system prompt (the same memory excerpt, up to a few thousand tokens), which 100 sessions
 * starting at once counted 100 times.
 */
function sharedCount(
  counter: TokenCounter,
  kind: "tools" | "system",
  text: string,
  count: () => number,
): number {
  let tables = countsByCounter.get(counter);
  if (tables === undefined) {
    tables = { tools: new Map(), system: new Map() };
    countsByCounter.set(counter, tables);
  }
  const table = tables[kind];
  let tokens = table.get(text);
  if (tokens === undefined) {
    tokens = count();
    if (table.size >= SHARED_COUNTS) table.clear();
    table.set(text, tokens);
  }
  return tokens;
}

/**
 * Tool specs' tokens by the specs array, per counter, shared by every meter: the server builds one array per memory
 * scope, and each new session's meter serialized it (a few KB of JSON) only to find its count in the shared table.
 */
const toolTokensByCounter = new WeakMap<TokenCounter, WeakMap<readonly ToolSpec[], number>>();

/**
 * Creates a meter over the cached token counter. Messages are cached per content array by the counter; the
 * system message (rebuilt for every request) is cached here by its text (and across meters, see
 * {@link sharedCount}), and the tool specs by identity, so a check on an unchanged 1,000-message
 * session costs only lookups.
 */
function createPromptMeter(counter: TokenCounter): PromptMeter {
  let lastSystemText: string | undefined;
  let lastSystemTokens = 0;
  const toolsCounted = toolTokensByCounter.get(counter) ?? new WeakMap<readonly ToolSpec[], number>();
  toolTokensByCounter.set(counter, toolsCounted);

  const countSystem = (message: Message): number => {
    const block = message.content[0];
    const text = message.content.length === 1 && block?.type === "text" ? block.text : undefined;
    if (text === undefined) return counter.countMessage(message);
    if (text === lastSystemText) return lastSystemTokens;
    const tokens = sharedCount(counter, "system", text, () => counter.countMessage(message));
    lastSystemText = text;
    lastSystemTokens = tokens;
    return tokens;
  };

  const countTools = (tools: readonly ToolSpec[]): number => {
    if (tools.length === 0) return 0;
    let tokens = toolsCounted.get(tools);
    if (tokens === undefined) {
      // Equal specs may come in a new array: their text is looked up in the table every meter shares.
      tokens = sharedCount(counter, "tools", JSON.stringify(tools), () => countToolTokens(counter, tools));
      toolsCounted.set(tools, tokens);
    }
    return tokens;
  };

  /** The last message list counted and its tokens: the next list usually only appends to it. */
  let last: { readonly messages: readonly Message[]; readonly tokens: number } | undefined;

  // A turn measures the whole history two or three times, each after a message or two were appended:
  // counting only what follows the last counted list keeps that from growing with the history (at 600
  // messages the per-message cache lookups and the prompt's copy were ~0.3 ms a turn). Messages are frozen,
  // so the same objects in the same order count the same.
  const countMessages = (messages: readonly Message[]): number => {
    let from = 0;
    let tokens = 0;
    if (last !== undefined && isPrefix(last.messages, messages)) {
      from = last.messages.length;
      tokens = last.tokens;
    }
    for (let index = from; index < messages.length; index += 1) {
      tokens += counter.countMessage(messages[index] as Message);
    }
    last = { messages, tokens };
    return tokens;
  };

  return {
    count(parts) {
      // buildPrompt's output is its system message (when there is one) followed by the messages as given.
      const system = buildPrompt({
        systemPrompt: parts.systemPrompt,
        memory: { summary: parts.summary, activeMessages: () => [] },
      });
      let total = REPLY_PRIMING_TOKENS + countTools(parts.tools) + countMessages(parts.messages);
      for (const message of system) {
        total += message.id === systemPromptMessageId ? countSystem(message) : counter.countMessage(message);
      }
      return total;
    },
  };
}

/** True when `prefix` holds the same message objects as the start of `messages`. */
function isPrefix(prefix: readonly Message[], messages: readonly Message[]): boolean {
  if (prefix === messages) return true;
  if (prefix.length > messages.length) return false;
  for (let index = 0; index < prefix.length; index += 1) {
    if (prefix[index] !== messages[index]) return false;
  }
  return true;
}

/**
 * The correction learnt from the provider: its reported prompt tokens divided by our count of the same
 * request, clamped to `bounds`, smoothed with the previous ratio ({@link RATIO_SMOOTHING}); the first
 * observation (`previous` undefined) is taken as it is. Returns `previous` (or 1) when there is nothing
 * usable to learn from.
 */
export function updateTokenRatio(
  previous: number | undefined,
  usage: Usage | undefined,
  countedTokens: number | undefined,
  bounds: RatioBounds = defaultRatioBounds,
): number {
  const kept = previous ?? 1;
  if (usage === undefined || countedTokens === undefined || countedTokens <= 0) return kept;
  if (!Number.isFinite(usage.promptTokens) || usage.promptTokens <= 0) return kept;
  const observed = Math.min(bounds.max, Math.max(bounds.min, usage.promptTokens / countedTokens));
  return previous === undefined ? observed : previous + RATIO_SMOOTHING * (observed - previous);
}

/** Our count scaled by the learnt ratio, rounded up (a prompt is never estimated smaller than it is). */
export function correctTokens(countedTokens: number, ratio: number): number {
  return Math.ceil(countedTokens * ratio);
}

/** What is sent besides the memory: the session's system prompt and the tool specs of its toolkit. */
export interface PromptInput {
  readonly systemPrompt: string;
  readonly tools: readonly ToolSpec[];
}

/** One measurement of a session's next request. */
export interface PromptMeasure {
  /** Our tokenizer's count (system prompt, summary, active messages, tool specs, framing). */
  readonly countedTokens: number;
  /** The provider/our-count ratio applied (1 until the provider has reported usage). */
  readonly ratio: number;
  /** `countedTokens × ratio`, rounded up: what the provider is expected to count. */
  readonly promptTokens: number;
}

/**
 * The one meter of "prompt tokens of this session": what triggers compaction is what `/status`, `/compact`,
 * `/history`, the admin API and the metrics show. Pure: it reads the ratio learnt into `memory.counters`.
 */
export interface ContextMeter {
  measure(memory: WorkingMemory, input: PromptInput, messages?: readonly Message[]): PromptMeasure;
}

/** Creates the meter over the cached token counter (one per session, so its caches follow that session). */
export function createContextMeter(counter: TokenCounter): ContextMeter {
  const meter = createPromptMeter(counter);
  return {
    measure(memory, input, messages = memory.activeMessages()) {
      const countedTokens = meter.count({
        systemPrompt: input.systemPrompt,
        summary: memory.summary,
        messages,
        tools: input.tools,
      });
      const ratio = memory.counters[tokenRatioCounter] ?? 1;
      return { countedTokens, ratio, promptTokens: correctTokens(countedTokens, ratio) };
    },
  };
}
