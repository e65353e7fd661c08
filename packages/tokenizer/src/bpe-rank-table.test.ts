import { readFileSync } from "node:fs";
import fc from "fast-check";
import cl100kRanks from "gpt-tokenizer/bpeRanks/cl100k_base";
import o200kRanks from "gpt-tokenizer/bpeRanks/o200k_base";
import cl100k from "gpt-tokenizer/encoding/cl100k_base";
import o200k from "gpt-tokenizer/encoding/o200k_base";
import { CL100K_TOKEN_SPLIT_REGEX, O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import { describe, expect, it } from "vitest";
import {
  BPE_RANK_ENCODINGS,
  bpeRankFilePath,
  encodeBpeRankFile,
  generateBpeRankFile,
} from "../scripts/generate-bpe-ranks.js";
import {
  BPE_SPLIT_PATTERNS,
  type BpeRankEncoding,
  loadBpeRankTable,
  parseBpeRankTable,
  rankAsGptTokenizer,
} from "./bpe-rank-table.js";

const reference = {
  o200k_base: { ranks: o200kRanks, api: o200k, regex: O200K_TOKEN_SPLIT_REGEX },
  cl100k_base: { ranks: cl100kRanks, api: cl100k, regex: CL100K_TOKEN_SPLIT_REGEX },
} as const;

/** gpt-tokenizer's own lookup by bytes (its BPE core is a private field of the encoding). */
function gptTokenizerLookup(encoding: BpeRankEncoding): (bytes: Uint8Array) => number | undefined {
  const core = (
    reference[encoding].api as unknown as {
      bytePairEncodingCoreProcessor: { getBpeRankFromBytes(bytes: Uint8Array): number | undefined };
    }
  ).bytePairEncodingCoreProcessor;
  return (bytes) => core.getBpeRankFromBytes(bytes);
}

const encoder = new TextEncoder();
const tokenBytes = (token: string | readonly number[]) =>
  typeof token === "string" ? encoder.encode(token) : Uint8Array.from(token);

describe("BPE rank files", () => {
  it.each(BPE_RANK_ENCODINGS)(
    "the committed %s file is what the generator makes from gpt-tokenizer",
    async (encoding) => {
      const committed = readFileSync(bpeRankFilePath(encoding));
      const generated = await generateBpeRankFile(encoding);
      expect(committed.byteLength).toBe(generated.byteLength);
      expect(Buffer.compare(committed, generated)).toBe(0);
    },
  );

  it.each(BPE_RANK_ENCODINGS)("the %s split pattern is gpt-tokenizer's", (encoding) => {
    const regex = new RegExp(BPE_SPLIT_PATTERNS[encoding], "gu");
    expect(regex.source).toBe(reference[encoding].regex.source);
    expect(regex.flags).toBe(reference[encoding].regex.flags);
  });

  it("refuses a file that is not a rank file or whose lengths do not add up", () => {
    expect(() => parseBpeRankTable(new Uint8Array(16))).toThrow(/not a BPE rank file/);
    const file = encodeBpeRankFile(["a", "b", [0xff]], {
      getBpeRankFromBytes: (bytes) => [97, 98, 255].indexOf(bytes[0]!),
    });
    expect(parseBpeRankTable(file).size).toBe(3);
    expect(() => parseBpeRankTable(file.subarray(0, file.byteLength - 1))).toThrow(/header says/);
  });

  it("refuses to write a table with a byte string twice", () => {
    expect(() => encodeBpeRankFile(["a", [97]], { getBpeRankFromBytes: () => 0 })).toThrow(/same bytes/);
  });
});

describe.each(BPE_RANK_ENCODINGS)("BPE rank table (%s)", (encoding) => {
  const table = loadBpeRankTable(encoding);
  const ranks = reference[encoding].ranks;
  const lookup = gptTokenizerLookup(encoding);

  it("finds every token at its rank, also inside a longer buffer", () => {
    expect(table.size).toBe(ranks.length);
    const padded = new Uint8Array(300).fill(0x20);
    const missed: number[] = [];
    ranks.forEach((token, rank) => {
      const bytes = tokenBytes(token);
      padded.set(bytes, 7);
      if (
        table.rankOf(bytes, 0, bytes.length) !== rank ||
        table.rankOf(padded, 7, 7 + bytes.length) !== rank
      ) {
        missed.push(rank);
      }
      padded.fill(0x20, 7, 7 + bytes.length);
    });
    expect(missed).toEqual([]);
  });

  it("finds nothing for byte strings that are not tokens, as gpt-tokenizer", () => {
    expect(table.rankOf(new Uint8Array(0), 0, 0)).toBe(-1);
    expect(table.rankOf(new Uint8Array(300).fill(0x41), 0, 300)).toBe(-1);
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 12 }), (bytes) => {
        fc.pre(!(bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf));
        expect(table.rankOf(bytes, 0, bytes.length)).toBe(lookup(bytes) ?? -1);
      }),
      { numRuns: 5000 },
    );
  });

  it("answers what gpt-tokenizer's merge lookup answers on ranges of UTF-8 text, a leading U+FEFF included", () => {
    const pieces = fc.array(
      fc.oneof(
        fc.constantFrom("\uFEFF", "using", "\n", "//", "#", "네임스페이스", " ", "é"),
        fc.string({ unit: "grapheme", maxLength: 4 }),
      ),
      { minLength: 1, maxLength: 6 },
    );
    fc.assert(
      fc.property(pieces, fc.nat(), fc.nat(), (parts, a, b) => {
        const bytes = encoder.encode(parts.join(""));
        const start = a % bytes.length;
        const end = start + 1 + (b % (bytes.length - start));
        expect(rankAsGptTokenizer(table, bytes, start, end, bytes.length)).toBe(
          lookup(bytes.subarray(start, end)) ?? -1,
        );
      }),
      { numRuns: 5000 },
    );
  });
});
