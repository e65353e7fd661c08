import { createRequire } from "node:module";
import type { ContentBlock, Message } from "./message.js";

/** BPE encodings shipped with the tokenizer package (no download at run time). */
export type TokenEncoding = "o200k_base" | "cl100k_base";

/**
 * How a count was obtained. `bpe:*` is a real tokenizer; `estimate` is the labelled
 * fallback (characters per token heuristic) and must never be mistaken for a real count.
 */
export type TokenCountMethod = `bpe:${TokenEncoding}` | "estimate";

/** Counts tokens of text and messages, caching per message. */
export interface TokenCounter {
  readonly method: TokenCountMethod;
  /** Tokens of a bare string. */
  countText(text: string): number;
  /** Tokens one message costs in a chat prompt, including the per-message framing. */
  countMessage(message: Message): number;
  /** Sum of {@link countMessage} over the messages. */
  countMessages(messages: readonly Message[]): number;
  /** Cache statistics, for benchmarks and metrics. */
  stats(): { readonly hits: number; readonly misses: number };
}

// Framing costs follow OpenAI's published accounting for chat prompts: every message is
// wrapped in role/separator tokens, a name adds one, tool calls carry their own framing.
const MESSAGE_FRAMING_TOKENS = 3;
const NAME_TOKENS = 1;
const TOOL_CALL_FRAMING_TOKENS = 8;
/** Images are billed by tiles server-side; 765 is OpenAI's cost of a 1024×1024 `high` image, 85 of `low`. */
const IMAGE_TOKENS = { low: 85, other: 765 } as const;

const NO_SPECIAL_TOKENS = { disallowedSpecial: new Set<string>() };

type TextCounter = (text: string) => number;

type BpeEncoding = Pick<typeof import("gpt-tokenizer/encoding/o200k_base"), "countTokens">;

// A BPE table takes 100-250 ms to load: it is loaded on the first count (synchronously, so counting stays a
// plain function), not when this module is imported; start-up and the CLI's client commands never pay for it.
const requireModule = createRequire(import.meta.url);
const loadedEncodings: Partial<Record<TokenEncoding, BpeEncoding>> = {};
function bpeCounter(encoding: TokenEncoding): TextCounter {
  return (text) => {
    loadedEncodings[encoding] ??= requireModule(`gpt-tokenizer/cjs/encoding/${encoding}`) as BpeEncoding;
    return loadedEncodings[encoding].countTokens(text, NO_SPECIAL_TOKENS);
  };
}

const bpeCounters: Record<TokenEncoding, TextCounter> = {
  o200k_base: bpeCounter("o200k_base"),
  cl100k_base: bpeCounter("cl100k_base"),
};

const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/gu;

/**
 * The labelled fallback: ~4 Latin characters per token, ~1 token per CJK character.
 * Only for when a real tokenizer cannot be used.
 */
export function estimateTokens(text: string): number {
  const cjk = text.match(CJK)?.length ?? 0;
  return Math.ceil(cjk + (text.length - cjk) / 4);
}

function blockTokens(block: ContentBlock, countText: TextCounter): number {
  switch (block.type) {
    case "text":
    case "reasoning":
      return countText(block.text);
    case "image":
      return block.detail === "low" ? IMAGE_TOKENS.low : IMAGE_TOKENS.other;
    case "tool_call":
      return TOOL_CALL_FRAMING_TOKENS + countText(block.name) + countText(block.arguments);
    case "tool_result":
      return countText(block.content);
  }
}

function createCounter(method: TokenCountMethod, countText: TextCounter): TokenCounter {
  // Keyed by the content array: messages are immutable and marking a message keeps its
  // content array, so a compacted or re-marked message is still a cache hit.
  const cache = new WeakMap<readonly ContentBlock[], number>();
  let hits = 0;
  let misses = 0;
  const countMessage = (message: Message): number => {
    let content = cache.get(message.content);
    if (content === undefined) {
      misses += 1;
      content = 0;
      for (const block of message.content) content += blockTokens(block, countText);
      cache.set(message.content, content);
    } else {
      hits += 1;
    }
    return content + MESSAGE_FRAMING_TOKENS + (message.name === undefined ? 0 : NAME_TOKENS);
  };
  return {
    method,
    countText,
    countMessage,
    countMessages(messages) {
      let total = 0;
      for (const message of messages) total += countMessage(message);
      return total;
    },
    stats: () => ({ hits, misses }),
  };
}

/** A counter over a real BPE tokenizer (default `o200k_base`, used by current OpenAI models). */
export function createTokenCounter(encoding: TokenEncoding = "o200k_base"): TokenCounter {
  return createCounter(`bpe:${encoding}`, bpeCounters[encoding]);
}

/** The fallback counter; its `method` is `estimate` so callers can say so. */
export function createEstimatingTokenCounter(): TokenCounter {
  return createCounter("estimate", estimateTokens);
}

/**
 * What a request's tool definitions add around their JSON (the tools section of the prompt). Providers
 * render tools into the prompt in their own way (OpenAI as a TypeScript-like namespace, open models' chat
 * templates as JSON with a short preamble); the wire JSON plus this framing is at least as long as either.
 */
const TOOLS_FRAMING_TOKENS = 16;

/**
 * Tokens the tool definitions of a chat-completions request cost, counted on the `tools` array as sent
 * (`[{type: "function", function: {...}}]`). The one rule for tool tokens: our meters and the test kit's
 * strict server both use it, so a request we size never surprises the server that checks it.
 */
export function countWireToolTokens(counter: TokenCounter, wireTools: readonly unknown[]): number {
  if (wireTools.length === 0) return 0;
  return counter.countText(JSON.stringify(wireTools)) + TOOLS_FRAMING_TOKENS;
}

/** {@link countWireToolTokens} of our tool specs, in the wire shape `@almanac/llm` sends them. */
export function countToolTokens(
  counter: TokenCounter,
  tools: readonly { readonly name: string; readonly description: string; readonly parameters: unknown }[],
): number {
  return countWireToolTokens(
    counter,
    tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    })),
  );
}
