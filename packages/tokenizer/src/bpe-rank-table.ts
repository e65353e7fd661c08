import { readFileSync } from "node:fs";

/**
 * A BPE encoding's rank table, read from a compact file in `packages/tokenizer/data/` that
 * `scripts/generate-bpe-ranks.ts` writes from gpt-tokenizer's own table (bpe-rank-table.test.ts checks that the
 * committed files are what the generator makes from the installed gpt-tokenizer).
 *
 * Why not gpt-tokenizer's table: its o200k module is a 2.4 MB array literal of 200k strings that the tokenizer
 * turns into a Map; loading it costs ~+55 MB RSS for good (14 MB of live heap, the rest the parse, which glibc
 * does not give back). This table is the token bytes in one buffer plus two typed arrays (4.4 MB for o200k)
 * and loads in 20-29 ms; see the figures in token-counter.ts. The file is not compressed: deflate would make
 * o200k's 1.6 MB 0.99 MB (brotli 0.79 MB) for 9-13 ms more per load, git stores it compressed anyway, and raw
 * bytes compare the same on every Node version (zlib's output may change with its version).
 *
 * File layout (little-endian): the 4 bytes `BPE1`; u32 number of ranks N; u32 total token bytes B; N u8 token
 * lengths in rank order (0 where a rank has no token); the B token bytes, concatenated in rank order.
 */
export const BPE_RANK_FILE_MAGIC = "BPE1";
export const BPE_RANK_FILE_HEADER_BYTES = 12;

/** Encodings whose rank files are committed. */
export type BpeRankEncoding = "o200k_base" | "cl100k_base";

/** The rank of a byte string, or -1 when it is not a token. */
export interface BpeRankTable {
  /** Number of ranks (the highest rank plus one). */
  readonly size: number;
  /** The rank of `bytes[start, end)`, or -1. */
  rankOf(bytes: Uint8Array, start: number, end: number): number;
}

/** FNV-1a over the bytes with a final avalanche (murmur3's fmix32): open addressing wants well-spread low bits. */
function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let index = start; index < end; index += 1) {
    hash = Math.imul(hash ^ bytes[index]!, 0x01000193);
  }
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) >>> 0;
}

/**
 * The lookup over a rank file's bytes: an open-addressing hash table (linear probing, at most half full) of
 * ranks, each slot checked against the token's bytes in the file; no string per token.
 */
export function parseBpeRankTable(file: Uint8Array): BpeRankTable {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const magic = String.fromCharCode(...file.subarray(0, 4));
  if (magic !== BPE_RANK_FILE_MAGIC || file.byteLength < BPE_RANK_FILE_HEADER_BYTES) {
    throw new Error(`not a BPE rank file (magic ${JSON.stringify(magic)})`);
  }
  const size = view.getUint32(4, true);
  const totalBytes = view.getUint32(8, true);
  if (file.byteLength !== BPE_RANK_FILE_HEADER_BYTES + size + totalBytes) {
    throw new Error(
      `BPE rank file is ${file.byteLength} bytes, its header says ${size} ranks and ${totalBytes} bytes`,
    );
  }
  const lengths = file.subarray(BPE_RANK_FILE_HEADER_BYTES, BPE_RANK_FILE_HEADER_BYTES + size);
  const tokens = file.subarray(BPE_RANK_FILE_HEADER_BYTES + size);
  const offsets = new Uint32Array(size + 1);
  for (let rank = 0; rank < size; rank += 1) offsets[rank + 1] = offsets[rank]! + lengths[rank]!;
  if (offsets[size] !== totalBytes)
    throw new Error("BPE rank file: token lengths do not add up to its bytes");

  let capacity = 1;
  while (capacity < size * 2) capacity *= 2;
  const mask = capacity - 1;
  const slots = new Int32Array(capacity).fill(-1);
  let longest = 0;
  for (let rank = 0; rank < size; rank += 1) {
    const length = lengths[rank]!;
    if (length === 0) continue;
    if (length > longest) longest = length;
    const start = offsets[rank]!;
    let slot = hashBytes(tokens, start, start + length) & mask;
    while (slots[slot] !== -1) slot = (slot + 1) & mask;
    slots[slot] = rank;
  }

  const rankOf = (bytes: Uint8Array, start: number, end: number): number => {
    const length = end - start;
    if (length <= 0 || length > longest) return -1;
    let slot = hashBytes(bytes, start, end) & mask;
    for (let rank = slots[slot]!; rank !== -1; rank = slots[slot]!) {
      if (lengths[rank] === length) {
        const at = offsets[rank]! - start;
        let index = start;
        while (index < end && tokens[at + index] === bytes[index]) index += 1;
        if (index === end) return rank;
      }
      slot = (slot + 1) & mask;
    }
    return -1;
  };
  return { size, rankOf };
}

const BYTE_ORDER_MARK = [0xef, 0xbb, 0xbf] as const;

/** Whether `bytes[start, end)` starts with U+FEFF's UTF-8 (which gpt-tokenizer's lookup drops). */
export function startsWithByteOrderMark(bytes: Uint8Array, start: number, end: number): boolean {
  return (
    end - start >= 3 &&
    bytes[start] === BYTE_ORDER_MARK[0] &&
    bytes[start + 1] === BYTE_ORDER_MARK[1] &&
    bytes[start + 2] === BYTE_ORDER_MARK[2]
  );
}

/**
 * The rank gpt-tokenizer's byte-pair merge finds for `bytes[start, end)`, a range of the valid UTF-8
 * `bytes[0, length)`; -1 for none. It differs from {@link BpeRankTable.rankOf} only for a range that starts with
 * U+FEFF: gpt-tokenizer decodes a byte string that is valid UTF-8 and looks up the text, and its TextDecoder drops
 * a leading byte order mark, so such a range is looked up without it and the tokens that start with U+FEFF are
 * never found (9 in o200k; `generate-bpe-ranks.ts` checks that no other token is out of its reach). Counting as
 * it does keeps our counts those of its `countTokens`, which the tests compare with.
 */
export function rankAsGptTokenizer(
  table: BpeRankTable,
  bytes: Uint8Array,
  start: number,
  end: number,
  length: number,
): number {
  if (!startsWithByteOrderMark(bytes, start, end)) return table.rankOf(bytes, start, end);
  // Valid UTF-8 when it ends on a character boundary (it starts on one): else looked up as bytes, unchanged.
  if (end < length && (bytes[end]! & 0xc0) === 0x80) return table.rankOf(bytes, start, end);
  return startsWithByteOrderMark(bytes, start + 3, end) ? -1 : table.rankOf(bytes, start + 3, end);
}

/**
 * Whether gpt-tokenizer finds the whole piece whose UTF-8 is `bytes[0, length)` as one token (its string Map):
 * a piece with a lone surrogate (`wellFormed` false) or a leading U+FEFF never is.
 */
export function isWholeTokenAsGptTokenizer(
  table: BpeRankTable,
  bytes: Uint8Array,
  length: number,
  wellFormed: boolean,
): boolean {
  return wellFormed && !startsWithByteOrderMark(bytes, 0, length) && table.rankOf(bytes, 0, length) !== -1;
}

const CONTRACTION = "'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE])";

/**
 * The pre-tokenizer patterns (flags `gu`), as gpt-tokenizer 4 writes them (bpe-rank-table.test.ts compares):
 * a constant here so that counting loads nothing of gpt-tokenizer.
 */
export const BPE_SPLIT_PATTERNS: Readonly<Record<BpeRankEncoding, string>> = {
  o200k_base: String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:${CONTRACTION})?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:${CONTRACTION})?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
  cl100k_base: String.raw`${CONTRACTION}|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+(?!\S)|\s`,
};

/** The committed rank file of an encoding (literal `new URL`s: the server build rebases them to dist/). */
function rankFileUrl(encoding: BpeRankEncoding): URL {
  switch (encoding) {
    case "o200k_base":
      return new URL("../data/o200k_base.ranks", import.meta.url);
    case "cl100k_base":
      return new URL("../data/cl100k_base.ranks", import.meta.url);
  }
}

/** Reads and indexes an encoding's committed rank file (synchronously: a few milliseconds). */
export function loadBpeRankTable(encoding: BpeRankEncoding): BpeRankTable {
  return parseBpeRankTable(readFileSync(rankFileUrl(encoding)));
}
