import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { linesHolding } from "./snippet.js";
import { containsTerm, normalizeForMatching } from "./text-matching.js";

describe("linesHolding", () => {
  it("finds the lines containsTerm finds line by line", () => {
    const piece = fc.constantFrom(
      "policy",
      "Policies",
      "cat",
      "cats",
      "category",
      "ops-4821",
      "项目",
      "目的",
      "ΑΣ",
      "é",
      " ",
      ", ",
      "-",
      "\n",
      "\n\n",
    );
    const term = fc.constantFrom("policy", "cat", "ops-4821", "ops", "4821", "项目", "目", "ας", "e");
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 40 }),
        fc.array(term, { minLength: 1, maxLength: 3 }),
        (pieces, terms) => {
          const lines = pieces.join("").split("\n");
          const expected: number[] = [];
          lines.forEach((line, index) => {
            const normalized = normalizeForMatching(line);
            if (terms.some((candidate) => containsTerm(normalized, candidate))) expected.push(index);
          });
          expect(linesHolding(normalizeForMatching(lines.join("\n")), terms)).toEqual(expected);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
