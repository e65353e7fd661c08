/**
 * Writes packages/tokenizer/data/<encoding>.ranks (the layout is in src/bpe-rank-table.ts) from gpt-tokenizer's own
 * rank table, so the token counter gets the same ranks without loading that table at run time.
 * Run after upgrading gpt-tokenizer: `npx tsx packages/tokenizer/scripts/generate-bpe-ranks.ts`
 * (bpe-rank-table.test.ts fails until the committed files match the installed gpt-tokenizer again).
 */
import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  BPE_RANK_FILE_HEADER_BYTES,
  BPE_RANK_FILE_MAGIC,
  type BpeRankEncoding,
} from "../src/bpe-rank-table.js";

/** gpt-tokenizer's rank table: the index is the rank; a string (its UTF-8 bytes) or the bytes of a token. */
type RankDecoder = readonly (string | readonly number[] | undefined)[];

/** The lookup gpt-tokenizer itself does for the byte-pair merge (its BytePairEncodingCore). */
interface RankLookup {
  getBpeRankFromBytes(bytes: Uint8Array): number | undefined;
}

export const BPE_RANK_ENCODINGS: readonly BpeRankEncoding[] = ["o200k_base", "cl100k_base"];

/**
 * The rank file of a table. Checks that one lookup by bytes over the file answers what gpt-tokenizer answers
 * (by string for a whole piece, by bytes in the merge): no byte string is there twice; every string token is
 * well-formed UTF-16 (a piece with a lone surrogate is never a whole token, as with gpt-tokenizer's string Map)
 * and does not start with U+FEFF; every token's bytes give back its own rank through gpt-tokenizer's `lookup`,
 * but for the tokens that start with a byte order mark, which gpt-tokenizer never finds (its TextDecoder drops
 * the mark; see `rankAsGptTokenizer` in src/bpe-rank-table.ts, which counts as it does).
 */
export function encodeBpeRankFile(ranks: RankDecoder, lookup: RankLookup): Uint8Array {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  const tokens: Uint8Array[] = [];
  const seen = new Map<string, number>();
  for (let rank = 0; rank < ranks.length; rank += 1) {
    const token = ranks[rank];
    if (token === undefined) {
      tokens.push(new Uint8Array(0));
      continue;
    }
    const bytes = typeof token === "string" ? encoder.encode(token) : Uint8Array.from(token);
    if (bytes.length === 0 || bytes.length > 255)
      throw new Error(`rank ${rank} is ${bytes.length} bytes long`);
    const key = Buffer.from(bytes).toString("latin1");
    const before = seen.get(key);
    if (before !== undefined) throw new Error(`ranks ${before} and ${rank} are the same bytes`);
    seen.set(key, rank);
    const byteOrderMark = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
    if (typeof token === "string" && (decoder.decode(bytes) !== token || byteOrderMark)) {
      throw new Error(
        `rank ${rank} is not a well-formed string without a leading U+FEFF: ${JSON.stringify(token)}`,
      );
    }
    if (!byteOrderMark && lookup.getBpeRankFromBytes(bytes) !== rank) {
      throw new Error(
        `rank ${rank}'s bytes look up as rank ${lookup.getBpeRankFromBytes(bytes)} in gpt-tokenizer`,
      );
    }
    tokens.push(bytes);
  }
  const totalBytes = tokens.reduce((sum, bytes) => sum + bytes.length, 0);
  const file = new Uint8Array(BPE_RANK_FILE_HEADER_BYTES + tokens.length + totalBytes);
  const view = new DataView(file.buffer);
  file.set(encoder.encode(BPE_RANK_FILE_MAGIC), 0);
  view.setUint32(4, tokens.length, true);
  view.setUint32(8, totalBytes, true);
  let at = BPE_RANK_FILE_HEADER_BYTES + tokens.length;
  tokens.forEach((bytes, rank) => {
    file[BPE_RANK_FILE_HEADER_BYTES + rank] = bytes.length;
    file.set(bytes, at);
    at += bytes.length;
  });
  return file;
}

/** gpt-tokenizer's table and BPE core for an encoding (each module loads the 1–2.4 MB table). */
async function gptTokenizerTable(
  encoding: BpeRankEncoding,
): Promise<{ ranks: RankDecoder; lookup: RankLookup }> {
  const [ranks, api] =
    encoding === "o200k_base"
      ? await Promise.all([
          import("gpt-tokenizer/bpeRanks/o200k_base"),
          import("gpt-tokenizer/encoding/o200k_base"),
        ])
      : await Promise.all([
          import("gpt-tokenizer/bpeRanks/cl100k_base"),
          import("gpt-tokenizer/encoding/cl100k_base"),
        ]);
  // The encoding object keeps its BPE core in a private field (gpt-tokenizer 4).
  const core: unknown = (api.default as unknown as { bytePairEncodingCoreProcessor?: unknown })
    .bytePairEncodingCoreProcessor;
  if (typeof (core as Partial<RankLookup> | undefined)?.getBpeRankFromBytes !== "function") {
    throw new Error("gpt-tokenizer's encoding has no bytePairEncodingCoreProcessor.getBpeRankFromBytes");
  }
  return { ranks: ranks.default, lookup: core as RankLookup };
}

/** The rank file for an encoding from the installed gpt-tokenizer. */
export async function generateBpeRankFile(encoding: BpeRankEncoding): Promise<Uint8Array> {
  const { ranks, lookup } = await gptTokenizerTable(encoding);
  return encodeBpeRankFile(ranks, lookup);
}

/** Where the committed rank file of an encoding is. */
export function bpeRankFilePath(encoding: BpeRankEncoding): string {
  return fileURLToPath(new URL(`../data/${encoding}.ranks`, import.meta.url));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const encoding of BPE_RANK_ENCODINGS) {
    const file = await generateBpeRankFile(encoding);
    writeFileSync(bpeRankFilePath(encoding), file);
    console.log(`${bpeRankFilePath(encoding)}: ${file.byteLength} bytes`);
  }
}
