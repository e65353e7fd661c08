import {
  BPE_SPLIT_PATTERNS,
  type BpeRankEncoding,
  type BpeRankTable,
  isWholeTokenAsGptTokenizer,
  loadBpeRankTable,
  rankAsGptTokenizer,
  startsWithByteOrderMark,
} from "./bpe-rank-table.js";
import type { ContentBlock, Message } from "./message.js";

/** BPE encodings whose rank tables are committed in packages/core/data (made from gpt-tokenizer's; no download). */
export type TokenEncoding = BpeRankEncoding;

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

type TextCounter = (text: string) => number;

/** Distinct pre-tokenized pieces remembered per encoding; cleared when full. */
const PIECE_CACHE_SIZE = 100_000;

/** Ranks are below 2^31; a pair that is not a token ranks after every pair that is. */
const NO_RANK = 0x7fffffff;

/**
 * Tokens of one piece: gpt-tokenizer's byte-pair merge (lowest rank first, the leftmost on a tie) over the
 * piece's UTF-8, counting the parts instead of listing them, with the ranks looked up as gpt-tokenizer does
 * ({@link rankAsGptTokenizer}). The piece is encoded here (lone surrogates as U+FFFD, as TextEncoder does) into
 * buffers reused from piece to piece.
 */
function createPieceMerger(table: BpeRankTable): (piece: string) => number {
  let bytes = new Uint8Array(1024);
  let starts = new Int32Array(1024);
  let ranks = new Int32Array(1024);
  let ids = new Int32Array(1024);
  const pairs = createPairRanks(table);
  return (piece) => {
    if (piece.length * 3 + 1 > bytes.length) {
      bytes = new Uint8Array(piece.length * 3 + 1);
      starts = new Int32Array(piece.length * 3 + 1);
      ranks = new Int32Array(piece.length * 3 + 1);
      ids = new Int32Array(piece.length * 3 + 1);
    }
    let length = 0;
    let wellFormed = true;
    for (let index = 0; index < piece.length; index += 1) {
      let code = piece.charCodeAt(index);
      if (code < 0x80) {
        bytes[length++] = code;
        continue;
      }
      if (code < 0x800) {
        bytes[length++] = 0xc0 | (code >> 6);
        bytes[length++] = 0x80 | (code & 0x3f);
        continue;
      }
      if (code >= 0xd800 && code <= 0xdfff) {
        const low = code <= 0xdbff ? piece.charCodeAt(index + 1) : Number.NaN;
        if (low >= 0xdc00 && low <= 0xdfff) {
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          index += 1;
          bytes[length++] = 0xf0 | (code >> 18);
          bytes[length++] = 0x80 | ((code >> 12) & 0x3f);
          bytes[length++] = 0x80 | ((code >> 6) & 0x3f);
          bytes[length++] = 0x80 | (code & 0x3f);
          continue;
        }
        wellFormed = false;
        code = 0xfffd;
      }
      bytes[length++] = 0xe0 | (code >> 12);
      bytes[length++] = 0x80 | ((code >> 6) & 0x3f);
      bytes[length++] = 0x80 | (code & 0x3f);
    }
    if (isWholeTokenAsGptTokenizer(table, bytes, length, wellFormed)) return 1;
    return length <= LONG_PIECE_BYTES || length >= HEAP_POSITIONS
      ? mergedParts(pairs, bytes, length, starts, ranks, ids)
      : mergedPartsByHeap(table, bytes, length);
  };
}

/** Pair ranks remembered by the merge (a direct-mapped cache of 2^16 entries, ~0.75 MB per encoding). */
const PAIR_CACHE_BITS = 16;

/** What the merge needs of the table: pair ranks by the two parts' token ids, and the id of each byte. */
interface PairRanks {
  readonly table: BpeRankTable;
  /** The token id (rank) of each single byte, or -1. */
  readonly byteIds: Int32Array;
  /** The cache: the pair of ids each slot holds (left -1: empty) and its rank ({@link NO_RANK} for none). */
  readonly lefts: Int32Array;
  readonly rights: Int32Array;
  readonly ranks: Int32Array;
}

function createPairRanks(table: BpeRankTable): PairRanks {
  const byteIds = new Int32Array(256);
  const single = new Uint8Array(1);
  for (let byte = 0; byte < 256; byte += 1) {
    single[0] = byte;
    byteIds[byte] = table.rankOf(single, 0, 1);
  }
  return {
    table,
    byteIds,
    lefts: new Int32Array(1 << PAIR_CACHE_BITS).fill(-1),
    rights: new Int32Array(1 << PAIR_CACHE_BITS),
    ranks: new Int32Array(1 << PAIR_CACHE_BITS),
  };
}

/**
 * The rank of parts `index` and `index + 1` of `parts` together, or {@link NO_RANK}. A part's id is the rank of
 * its bytes (-1 when unknown), so two ids name the pair's bytes and the rank is looked up by them in the cache
 * first: most pairs of a text recur, and hashing two ids is cheaper than hashing and comparing the bytes. A pair
 * that starts with U+FEFF's bytes is never cached: gpt-tokenizer's rank of it depends on the byte after it.
 */
function pairRank(
  pairs: PairRanks,
  bytes: Uint8Array,
  length: number,
  starts: Int32Array,
  ids: Int32Array,
  parts: number,
  index: number,
): number {
  if (index + 2 > parts) return NO_RANK;
  const left = ids[index]!;
  const right = ids[index + 1]!;
  const start = starts[index]!;
  if (left < 0 || right < 0 || bytes[start] === 0xef) {
    const rank = rankAsGptTokenizer(pairs.table, bytes, start, starts[index + 2]!, length);
    return rank === -1 ? NO_RANK : rank;
  }
  const slot = Math.imul(left ^ Math.imul(right, 0x85ebca6b), 0x9e3779b1) >>> (32 - PAIR_CACHE_BITS);
  if (pairs.lefts[slot] === left && pairs.rights[slot] === right) return pairs.ranks[slot]!;
  const found = pairs.table.rankOf(bytes, start, starts[index + 2]!);
  const rank = found === -1 ? NO_RANK : found;
  pairs.lefts[slot] = left;
  pairs.rights[slot] = right;
  pairs.ranks[slot] = rank;
  return rank;
}

/**
 * How many parts the merge leaves of `bytes[0, length)`: parts are `bytes[starts[i], starts[i + 1])` with token
 * id `ids[i]`, and `ranks[i]` is the rank of parts i and i + 1 together (the arrays are scratch, at least
 * `length + 1` long).
 */
function mergedParts(
  pairs: PairRanks,
  bytes: Uint8Array,
  length: number,
  starts: Int32Array,
  ranks: Int32Array,
  ids: Int32Array,
): number {
  let parts = length;
  for (let index = 0; index <= length; index += 1) starts[index] = index;
  for (let index = 0; index < length; index += 1) ids[index] = pairs.byteIds[bytes[index]!]!;
  for (let index = 0; index < length; index += 1)
    ranks[index] = pairRank(pairs, bytes, length, starts, ids, parts, index);
  while (parts > 1) {
    let lowestRank = NO_RANK;
    let lowest = -1;
    for (let index = 0; index < parts - 1; index += 1) {
      const rank = ranks[index]!;
      if (rank < lowestRank) {
        lowestRank = rank;
        lowest = index;
      }
    }
    if (lowest === -1) break;
    // The merged part's id is its rank, unless it starts with U+FEFF (then the rank may be of fewer bytes).
    ids[lowest] =
      bytes[starts[lowest]!] === 0xef && startsWithByteOrderMark(bytes, starts[lowest]!, starts[lowest + 2]!)
        ? -1
        : lowestRank;
    // Shifted by hand: pieces are short, and three copyWithin calls per merge cost more than the loop.
    for (let index = lowest + 1; index < parts; index += 1) {
      starts[index] = starts[index + 1]!;
      ids[index] = ids[index + 1]!;
      ranks[index - 1] = ranks[index]!;
    }
    parts -= 1;
    ranks[lowest] = pairRank(pairs, bytes, length, starts, ids, parts, lowest);
    if (lowest > 0) ranks[lowest - 1] = pairRank(pairs, bytes, length, starts, ids, parts, lowest - 1);
  }
  return parts;
}

/**
 * Above this many bytes a piece is merged with a heap ({@link mergedPartsByHeap}): the scan for the lowest pair
 * makes the merge quadratic (a 20,000-character run of CJK, one piece, took ~1.9 s).
 */
const LONG_PIECE_BYTES = 256;
/** Heap keys are `rank * HEAP_POSITIONS + position`, exact in a double while ranks stay below 2^31. */
const HEAP_POSITIONS = 2 ** 22;

/**
 * The same merge as {@link mergedParts} in O(n log n): the pairs in a binary heap keyed by (rank, position),
 * the parts as a linked list, an entry dropped when popped if its pair's rank has changed since (a rank is one
 * byte string, so the same rank at the same start is the same pair). The lowest key is the lowest rank, the
 * leftmost on a tie: the pair the scan picks.
 */
function mergedPartsByHeap(table: BpeRankTable, bytes: Uint8Array, length: number): number {
  // The part starting at byte i ends at next[i] and follows prev[i]; pairRanks[i] is its pair's rank.
  const next = new Int32Array(length);
  const prev = new Int32Array(length);
  const pairRanks = new Int32Array(length);
  // Every merge pushes at most two pairs.
  const heap = new Float64Array(3 * length);
  let heapSize = 0;
  const push = (key: number): void => {
    let at = heapSize++;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (heap[parent]! <= key) break;
      heap[at] = heap[parent]!;
      at = parent;
    }
    heap[at] = key;
  };
  const pop = (): number => {
    const top = heap[0]!;
    const last = heap[--heapSize]!;
    let at = 0;
    for (let child = 1; child < heapSize; child = 2 * at + 1) {
      if (child + 1 < heapSize && heap[child + 1]! < heap[child]!) child += 1;
      if (heap[child]! >= last) break;
      heap[at] = heap[child]!;
      at = child;
    }
    heap[at] = last;
    return top;
  };
  const rankPair = (start: number): void => {
    const end = next[start]!;
    const rank = end >= length ? -1 : rankAsGptTokenizer(table, bytes, start, next[end]!, length);
    pairRanks[start] = rank === -1 ? NO_RANK : rank;
    if (rank !== -1) push(rank * HEAP_POSITIONS + start);
  };
  for (let start = 0; start < length; start += 1) {
    next[start] = start + 1;
    prev[start] = start - 1;
  }
  for (let start = 0; start < length; start += 1) rankPair(start);
  let parts = length;
  while (heapSize > 0) {
    const key = pop();
    const rank = Math.floor(key / HEAP_POSITIONS);
    const start = key - rank * HEAP_POSITIONS;
    if (pairRanks[start] !== rank) continue;
    const merged = next[start]!;
    next[start] = next[merged]!;
    if (next[start]! < length) prev[next[start]!] = start;
    pairRanks[merged] = NO_RANK;
    parts -= 1;
    rankPair(start);
    if (start > 0) rankPair(prev[start]!);
  }
  return parts;
}

// Character classes of ASCII for the o200k pattern's pieces ({@link o200kAsciiPieceEnd}).
const UPPER = 1;
const LOWER = 2;
const DIGIT = 3;
/** `\r` and `\n`: whitespace that no letter piece may start with. */
const LINE_BREAK = 4;
/** Space, tab, vertical tab, form feed: whitespace that may start a letter piece. */
const BLANK = 5;
/** Punctuation and control characters: neither letter, digit nor whitespace. */
const OTHER = 6;
const asciiClasses = new Uint8Array(128).fill(OTHER);
for (let code = 65; code <= 90; code += 1) asciiClasses[code] = UPPER;
for (let code = 97; code <= 122; code += 1) asciiClasses[code] = LOWER;
for (let code = 48; code <= 57; code += 1) asciiClasses[code] = DIGIT;
for (const code of [9, 11, 12, 32]) asciiClasses[code] = BLANK;
for (const code of [10, 13]) asciiClasses[code] = LINE_BREAK;

// No `u` flag: any UTF-16 unit above 0x7f (surrogates included) is found.
const nonAsciiCharacter = /[\u0080-\uffff]/g;
/** A character the pattern's `\s` matches (tested on one non-ASCII character). */
const NON_ASCII_SPACE = /^\s$/u;

/** Tab, line feed, vertical tab, form feed, carriage return, space: `\s` in ASCII. */
function isAsciiSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

/**
 * Where the piece that o200k's split pattern ({@link BPE_SPLIT_PATTERNS}) matches at `start` of the all-ASCII
 * `text` ends: the pattern's alternatives (with their backtracking) worked out for ASCII, where `\p{L}` is
 * `[A-Za-z]`, `\p{N}` is `[0-9]`, `\s` is `[\t\n\v\f\r ]` and there are no marks. Counting the lines of a
 * memory file went mostly to the pattern; token-counter.test.ts compares the pieces with it on random ASCII.
 */
function o200kAsciiPieceEnd(text: string, start: number, end: number): number {
  const kind = asciiClasses[text.charCodeAt(start)]!;
  // `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?:'s|…)?` or, with no lower case, `…[\p{Lu}…]+[\p{Ll}…]*(?:'s|…)?`.
  let letters = start;
  if ((kind === OTHER || kind === BLANK) && start + 1 < end) {
    const after = asciiClasses[text.charCodeAt(start + 1)]!;
    if (after === UPPER || after === LOWER) letters = start + 1;
  }
  const first = asciiClasses[text.charCodeAt(letters)]!;
  if (first === UPPER || first === LOWER) {
    let at = letters;
    while (at < end && asciiClasses[text.charCodeAt(at)] === UPPER) at += 1;
    while (at < end && asciiClasses[text.charCodeAt(at)] === LOWER) at += 1;
    return contractionEnd(text, at, end);
  }
  // `\p{N}{1,3}`
  if (kind === DIGIT) {
    let at = start + 1;
    while (at < end && at < start + 3 && asciiClasses[text.charCodeAt(at)] === DIGIT) at += 1;
    return at;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
  let other = -1;
  if (kind === OTHER) other = start;
  else if (
    text.charCodeAt(start) === 32 &&
    start + 1 < end &&
    asciiClasses[text.charCodeAt(start + 1)] === OTHER
  )
    other = start + 1;
  if (other !== -1) {
    let at = other;
    while (at < end && asciiClasses[text.charCodeAt(at)] === OTHER) at += 1;
    while (at < end) {
      const code = text.charCodeAt(at);
      if (code !== 10 && code !== 13 && code !== 47) break;
      at += 1;
    }
    return at;
  }
  // Whitespace: `\s*[\r\n]+` (up to the run's last line break), else `\s+(?!\S)`, else `\s+`.
  let runEnd = start;
  while (runEnd < end) {
    const runKind = asciiClasses[text.charCodeAt(runEnd)];
    if (runKind !== BLANK && runKind !== LINE_BREAK) break;
    runEnd += 1;
  }
  for (let at = runEnd - 1; at >= start; at -= 1)
    if (asciiClasses[text.charCodeAt(at)] === LINE_BREAK) return at + 1;
  if (runEnd === end || runEnd - start === 1) return runEnd;
  return runEnd - 1;
}

/** After a letter piece ending at `at`: past the optional contraction `'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE])`. */
function contractionEnd(text: string, at: number, end: number): number {
  if (at + 1 >= end || text.charCodeAt(at) !== 39) return at;
  const next = text.charCodeAt(at + 1) | 0x20;
  if (next === 115 || next === 100 || next === 109 || next === 116) return at + 2;
  if (at + 2 >= end) return at;
  const third = text.charCodeAt(at + 2) | 0x20;
  if ((next === 108 && third === 108) || (next === 118 && third === 101) || (next === 114 && third === 101))
    return at + 3;
  return at;
}

/**
 * Calls `visit` with each piece of `text` as o200k's split pattern (`splitter`, flags `gu`) cuts it, in order,
 * and sums what it returns. ASCII stretches are cut by {@link o200kAsciiPieceEnd}: the pattern's match at a
 * piece's start reads at most two characters past the piece's end (a contraction's `'ll`, the character after
 * a run of letters, digits, punctuation or whitespace), so a piece the scanner finds in the stretch before the
 * next non-ASCII character is the pattern's if it ends three or more characters before it. The rest (the end of
 * such a stretch and the non-ASCII text) goes through the pattern, and the scanner takes over again after it.
 */
function forEachO200kPiece(
  text: string,
  splitter: RegExp,
  visit: (text: string, start: number, end: number) => number,
): number {
  let sum = 0;
  const length = text.length;
  let start = 0;
  while (start < length) {
    nonAsciiCharacter.lastIndex = start;
    const stop = nonAsciiCharacter.exec(text)?.index ?? length;
    // Whitespace runs are one piece across the ASCII boundary (`\s*[\r\n]+`, `\s+` take U+3000, U+00A0, …
    // too): before non-ASCII whitespace, the ASCII whitespace leading up to it is the pattern's to cut.
    let limit = stop;
    if (stop < length && NON_ASCII_SPACE.test(text.charAt(stop)))
      while (limit > start && isAsciiSpace(text.charCodeAt(limit - 1))) limit -= 1;
    while (start < stop) {
      const end = o200kAsciiPieceEnd(text, start, stop);
      if (stop < length && end + 2 >= limit) break;
      sum += visit(text, start, end);
      start = end;
    }
    if (start >= length) break;
    // The pattern from here until it has passed the non-ASCII character.
    splitter.lastIndex = start;
    while (start <= stop) {
      const match = splitter.exec(text);
      if (match === null) return sum;
      if (match[0] === "") {
        splitter.lastIndex += 1;
      } else {
        sum += visit(text, match.index, match.index + match[0].length);
      }
      start = splitter.lastIndex;
    }
  }
  return sum;
}

/** The pieces o200k's pattern splits `text` into, found as counting finds them (the tests compare with it). */
export function o200kPieces(text: string): string[] {
  const pieces: string[] = [];
  forEachO200kPiece(text, new RegExp(BPE_SPLIT_PATTERNS.o200k_base, "gu"), (_, start, end) => {
    pieces.push(text.slice(start, end));
    return 0;
  });
  return pieces;
}

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
// Why our own table and merge beside gpt-tokenizer (measured 2026-12-03, Node 20, 2 cores at load 2.8-3.4, each
// a fresh `node --import tsx` process): the first count costs +3-5 MB RSS and 28-68 ms (reading and indexing
// o200k's file: 20-29 ms; cl100k 5-7 ms), where gpt-tokenizer's table cost +56-71 MB RSS (19.6 MB of heap left
// after a GC, against 5.3 MB + 4.3 MB of array buffers) and 232-325 ms. `almanac start` from dist/ idles at
// 135 MB instead of 184 MB after its first index build (bench/server-process.ts). The first count of 30,000
// distinct lines of words, hashes and CJK: median 404-439 ms against 840-979 ms (6 interleaved rounds in one
// process, load 2-3.4); a 20,000-character run of CJK (one piece) 41-65 ms with the heap merge against
// 1.8-2.5 s (gpt-tokenizer's own count of it: 1.7 s).
// Counting a piece seen before is the same code as before (bench/token-count.ts: within its noise).
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
