import {
  type BpeRankTable,
  isWholeTokenAsGptTokenizer,
  rankAsGptTokenizer,
  startsWithByteOrderMark,
} from "./bpe-rank-table.js";

/*
 * The byte-pair merge of one pre-tokenized piece, counting its tokens (token-counter.ts splits text into pieces
 * and remembers each piece's count).
 */

/** Ranks are below 2^31; a pair that is not a token ranks after every pair that is. */
const NO_RANK = 0x7fffffff;

/**
 * Tokens of one piece: gpt-tokenizer's byte-pair merge (lowest rank first, the leftmost on a tie) over the
 * piece's UTF-8, counting the parts instead of listing them, with the ranks looked up as gpt-tokenizer does
 * ({@link rankAsGptTokenizer}). The piece is encoded here (lone surrogates as U+FFFD, as TextEncoder does) into
 * buffers reused from piece to piece.
 */
export function createPieceMerger(table: BpeRankTable): (piece: string) => number {
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
