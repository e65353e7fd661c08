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

/** The parts of gpt-tokenizer's BPE core that {@link cachingPieceCounter} uses (gpt-tokenizer 4). */
interface BpeCore {
  readonly tokenSplitRegex: RegExp;
  getBpeRankFromString(piece: string): number | undefined;
  getBpeRankFromBytes(bytes: Uint8Array): number | undefined;
}

function isBpeCore(value: unknown): value is BpeCore {
  if (typeof value !== "object" || value === null) return false;
  const core = value as Partial<Record<keyof BpeCore, unknown>>;
  return (
    core.tokenSplitRegex instanceof RegExp &&
    core.tokenSplitRegex.global &&
    typeof core.getBpeRankFromString === "function" &&
    typeof core.getBpeRankFromBytes === "function"
  );
}

/** Distinct pre-tokenized pieces (and byte sequences) remembered per encoding; cleared when full. */
const PIECE_CACHE_SIZE = 100_000;

/**
 * Tokens of one piece that is not a token itself: gpt-tokenizer's byte-pair merge (lowest rank
 * first, the leftmost on a tie), counting the parts instead of listing them. The ranks of byte
 * sequences are remembered: a piece seen once (a run of Chinese, a hash) is made of pairs seen often,
 * and the tokenizer's own lookup decodes and binary-searches every pair that is not whole UTF-8.
 */
function createPieceMerger(core: BpeCore): (piece: string) => number {
  const encoder = new TextEncoder();
  const ranks = new Map<string, number>();
  return (piece) => {
    const bytes = encoder.encode(piece);
    // As many bytes as characters: ASCII, whose every byte range is itself a string of the rank table.
    const ascii = bytes.length === piece.length;
    // One character per byte, so a byte range is a substring: a cheap key for `ranks`.
    const keys = ascii
      ? piece
      : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
    const starts: number[] = [];
    const pairRanks: number[] = [];
    const rankAt = (index: number): number => {
      const start = starts[index];
      const end = starts[index + 2];
      if (start === undefined || end === undefined) return Number.POSITIVE_INFINITY;
      const key = keys.slice(start, end);
      let rank = ranks.get(key);
      if (rank === undefined) {
        rank =
          (ascii ? core.getBpeRankFromString(key) : core.getBpeRankFromBytes(bytes.subarray(start, end))) ??
          Number.POSITIVE_INFINITY;
        if (ranks.size >= PIECE_CACHE_SIZE) ranks.clear();
        ranks.set(key, rank);
      }
      return rank;
    };
    for (let index = 0; index <= bytes.length; index += 1) starts.push(index);
    for (let index = 0; index <= bytes.length; index += 1) pairRanks.push(rankAt(index));
    while (starts.length > 1) {
      let lowestRank = Number.POSITIVE_INFINITY;
      let lowest = -1;
      for (let index = 0; index < pairRanks.length - 1; index += 1) {
        const rank = pairRanks[index]!;
        if (rank < lowestRank) {
          lowestRank = rank;
          lowest = index;
        }
      }
      if (lowest === -1) break;
      starts.splice(lowest + 1, 1);
      pairRanks.splice(lowest, 1);
      pairRanks[lowest] = rankAt(lowest);
      if (lowest > 0) pairRanks[lowest - 1] = rankAt(lowest - 1);
    }
    return starts.length - 1;
  };
}

/**
 * The tokenizer's own count with no special tokens (split the text with the encoding's pattern, then
 * byte-pair encode each piece), with the tokens of each piece remembered: memory text repeats its
 * words, and indexing counts every line. gpt-tokenizer's `countTokens` spends most of its time on its
 * rank table and an LRU merge cache per piece; a plain map of piece counts is several times faster
 * and gives the same numbers (token-counter.test.ts compares both on random text).
 */
function cachingPieceCounter(core: BpeCore): TextCounter {
  const splitter = new RegExp(core.tokenSplitRegex.source, core.tokenSplitRegex.flags);
  const pieceTokens = new Map<string, number>();
  const merge = createPieceMerger(core);
  return (text) => {
    let tokens = 0;
    splitter.lastIndex = 0;
    for (let match = splitter.exec(text); match !== null; match = splitter.exec(text)) {
      const piece = match[0];
      if (piece === "") {
        splitter.lastIndex += 1;
        continue;
      }
      let count = pieceTokens.get(piece);
      if (count === undefined) {
        count = core.getBpeRankFromString(piece) === undefined ? merge(piece) : 1;
        if (pieceTokens.size >= PIECE_CACHE_SIZE) pieceTokens.clear();
        pieceTokens.set(piece, count);
      }
      tokens += count;
    }
    return tokens;
  };
}

const loadedEncodings: Partial<Record<TokenEncoding, BpeEncoding>> = {};
function loadEncoding(encoding: TokenEncoding): BpeEncoding {
  loadedEncodings[encoding] ??= requireModule(`gpt-tokenizer/cjs/encoding/${encoding}`) as BpeEncoding;
  return loadedEncodings[encoding];
}

function bpeCounter(encoding: TokenEncoding): TextCounter {
  let counter: TextCounter | undefined;
  return (text) => {
    if (counter === undefined) {
      const loaded = loadEncoding(encoding);
      // The module's default export is the encoding object that holds the BPE core.
      const instance: unknown = (loaded as { default?: unknown }).default;
      const core =
        typeof instance === "object" && instance !== null && "bytePairEncodingCoreProcessor" in instance
          ? instance.bytePairEncodingCoreProcessor
          : undefined;
      // Another tokenizer version without this core keeps the (slower) public count.
      counter = isBpeCore(core)
        ? cachingPieceCounter(core)
        : (value) => loaded.countTokens(value, NO_SPECIAL_TOKENS);
    }
    return counter(text);
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
