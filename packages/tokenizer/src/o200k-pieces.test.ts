import fc from "fast-check";
import * as o200k from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { BPE_SPLIT_PATTERNS } from "./bpe-rank-table.js";
import { o200kPieces } from "./o200k-pieces.js";
import { createTokenCounter } from "./token-counter.js";

describe("o200k's split of ASCII text without the pattern", () => {
  const pattern = new RegExp(BPE_SPLIT_PATTERNS.o200k_base, "gu");
  // Every class the pattern tells apart in ASCII, and the contractions.
  const ascii = fc
    .array(
      fc.oneof(
        fc.constantFrom(..."aZzA'sStTdDmMlLvVeErR09 \t\n\r\u000b\f/.-_,!#\u0000\u001f\u007f"),
        fc.constantFrom(
          "'s",
          "'ll",
          "'LL",
          "'ve",
          "'Re",
          "'d",
          "'x",
          "  ",
          "\r\n",
          " \n ",
          "123456",
          "OPS-4821",
          "don't",
        ),
        fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((code) => String.fromCharCode(code)) }),
      ),
      { maxLength: 30 },
    )
    .map((parts) => parts.join(""));

  it("cuts ASCII into the pattern's pieces", () => {
    fc.assert(
      fc.property(ascii, (text) => {
        expect(o200kPieces(text)).toEqual(text.match(pattern) ?? []);
      }),
      { numRuns: 20_000 },
    );
  });

  // ASCII next to what the scanner leaves to the pattern: letters, digits, punctuation and spaces beyond ASCII.
  const mixed = fc
    .array(
      fc.oneof(
        ascii,
        fc.constantFrom(
          "é",
          "É",
          "项目",
          "。",
          "，",
          "\u00a0",
          "\u3000",
          "\u0301",
          "٣",
          "²",
          "😀",
          "\ud800",
          "’",
          "ǅ",
        ),
      ),
      { maxLength: 8 },
    )
    .map((parts) => parts.join(""));

  it("leaves a whitespace run that reaches non-ASCII whitespace to the pattern (fast-check found one)", () => {
    for (const text of [" \n   \u3000\r\n", "a \n\t  \u00a0\n", "x\n\n    \u2028 y", "ok.   \u3000"])
      expect(o200kPieces(text)).toEqual(text.match(pattern) ?? []);
    const spaces = fc
      .array(fc.constantFrom(" ", "\n", "\r", "\t", "\u00a0", "\u3000", "\u2028", "\u205f", "a", "。"), {
        maxLength: 14,
      })
      .map((parts) => parts.join(""));
    fc.assert(
      fc.property(spaces, (text) => {
        expect(o200kPieces(text)).toEqual(text.match(pattern) ?? []);
      }),
      { numRuns: 20_000 },
    );
  });

  it("cuts mixed text into the pattern's pieces", () => {
    fc.assert(
      fc.property(mixed, (text) => {
        expect(o200kPieces(text)).toEqual(text.match(pattern) ?? []);
      }),
      { numRuns: 20_000 },
    );
  });

  it("counts ASCII as gpt-tokenizer does", () => {
    const counter = createTokenCounter();
    fc.assert(
      fc.property(ascii, (text) => {
        expect(counter.countText(text)).toBe(o200k.countTokens(text, { disallowedSpecial: new Set() }));
      }),
      { numRuns: 5000 },
    );
  });
});
