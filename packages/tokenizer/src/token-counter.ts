import type { ContentBlock, Message, TokenCounter, TokenCountMethod, TokenEncoding } from "@almanac/core";
import { createPieceMerger } from "./bpe-merge.js";
import { BPE_SPLIT_PATTERNS, type BpeRankTable, loadBpeRankTable } from "./bpe-rank-table.js";
import { forEachO200kPiece } from "./o200k-pieces.js";

// Framing costs follow OpenAI's published accounting for chat prompts: every message is
// wrapped in role/separator tokens, a name adds one, tool calls carry their own framing.
const MESSAGE_FRAMING_TOKENS = 3;
const NAME_TOKENS = 1;
const TOOL_CALL_FRAMING_TOKENS = 8;
/**
 * What the meter counts for one image part, whatever its size: providers bill images by tiles or patches of their
 * own. 765 is OpenAI's `high`-detail cost of an image scaled to 1024×768 or smaller (4 tiles × 170 + 85), which
 * is what an image Almanac resized to its longest side (1568 px by default) costs there at 4:3; a 16:9 one costs
 * 1105, and other providers differ (docs/attachments.md). 85 is the `low`-detail cost. The provider's reported
 * usage corrects the meter after each call.
 */
export const IMAGE_TOKEN_ESTIMATE = Object.freeze({ low: 85, other: 765 });

type TextCounter = (text: string) => number;

/** Distinct pre-tokenized pieces remembered per encoding; cleared when full. */
const PIECE_CACHE_SIZE = 100_000;

/**
 * gpt-tokenizer's count with no special tokens (split the text with the encoding's pattern, then byte-pair
 * encode each piece), over our compact rank table instead of its own (see bpe-rank-table.ts), with the tokens
 * of each piece remembered: memory text repeats its words, and indexing counts every line. The same numbers as
 * its `countTokens` (token-counter.test.ts compares both on random text). With `asciiSplit` (o200k only), the
 * ASCII stretches are cut without the pattern ({@link forEachO200kPiece}).
 */
function cachingPieceCounter(table: BpeRankTable, splitPattern: string, asciiSplit: boolean): TextCounter {
  const splitter = new RegExp(splitPattern, "gu");
  const tokensOf = createPieceCache(createPieceMerger(table));
  return (text) => {
    if (asciiSplit) return forEachO200kPiece(text, splitter, tokensOf);
    let tokens = 0;
    splitter.lastIndex = 0;
    for (let match = splitter.exec(text); match !== null; match = splitter.exec(text)) {
      const piece = match[0];
      if (piece === "") {
        splitter.lastIndex += 1;
        continue;
      }
      tokens += tokensOf(piece, 0, piece.length);
    }
    return tokens;
  };
}

/** Slots of the piece cache's hash table: a power of two, at most ~38% full with {@link PIECE_CACHE_SIZE} pieces. */
const PIECE_CACHE_SLOTS = 2 ** 18;

/**
 * The tokens of pieces given as `text[start, end)`, remembered (up to {@link PIECE_CACHE_SIZE} pieces, then
 * forgotten all at once). The pieces are found by a hash of their characters (open addressing, linear probing)
 * and compared in place, so a piece seen before costs no string: a Map keyed by the piece needed a slice of
 * the text for every piece of every line, most of them seen before.
 */
function createPieceCache(
  merge: (piece: string) => number,
): (text: string, start: number, end: number) => number {
  const mask = PIECE_CACHE_SLOTS - 1;
  const slots = new Int32Array(PIECE_CACHE_SLOTS).fill(-1);
  const pieces: string[] = [];
  const counts = new Int32Array(PIECE_CACHE_SIZE);
  return (text, start, end) => {
    let hash = 0x811c9dc5;
    for (let index = start; index < end; index += 1)
      hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
    hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
    hash ^= hash >>> 13;
    const length = end - start;
    let slot = hash & mask;
    for (let entry = slots[slot]!; entry !== -1; entry = slots[slot]!) {
      const piece = pieces[entry]!;
      if (piece.length === length && text.startsWith(piece, start)) return counts[entry]!;
      slot = (slot + 1) & mask;
    }
    const piece = start === 0 && end === text.length ? text : text.slice(start, end);
    const count = merge(piece);
    if (pieces.length >= PIECE_CACHE_SIZE) {
      slots.fill(-1);
      pieces.length = 0;
      slot = hash & mask;
    }
    slots[slot] = pieces.length;
    counts[pieces.length] = count;
    pieces.push(piece);
    return count;
  };
}

// The rank table is read on the first count (synchronously, so counting stays a plain function), not when this
// module is imported; start-up and the CLI's client commands never pay for it.
// Our own rank table and merge rather than gpt-tokenizer's: a tenth of the memory and a quarter of the first
// count's time, and linear on long CJK runs (docs/decisions/0006-own-bpe-tables.md).
function bpeCounter(encoding: TokenEncoding): TextCounter {
  let counter: TextCounter | undefined;
  return (text) => {
    counter ??= cachingPieceCounter(
      loadBpeRankTable(encoding),
      BPE_SPLIT_PATTERNS[encoding],
      encoding === "o200k_base",
    );
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
      return block.detail === "low" ? IMAGE_TOKEN_ESTIMATE.low : IMAGE_TOKEN_ESTIMATE.other;
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
