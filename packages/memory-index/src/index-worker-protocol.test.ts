import { describe, expect, it } from "vitest";
import { fromWireChunk, toWireChunk } from "./index-worker-protocol.js";
import type { IndexChunk } from "./types.js";

const chunk = (terms: readonly string[]): IndexChunk => ({
  id: "memory/a.md:1-2:0123456789abcdef",
  path: "memory/a.md",
  startLine: 1,
  endLine: 2,
  headings: ["Travel"],
  text: "Passport renewal",
  hash: "0123456789abcdef",
  tokens: 3,
  terms,
  textLength: 2,
});

describe("the index worker's chunk form", () => {
  it("sends the terms as one string and gives the same terms back", () => {
    const original = chunk(["passport", "renewal", "", "项目", "项目部署"]);
    const wire = toWireChunk(original);
    expect(wire).toHaveProperty("termText", "passport renewal  项目 项目部署");
    expect(wire).not.toHaveProperty("terms");
    const back = fromWireChunk(structuredClone(wire));
    expect(back.terms).toEqual(original.terms);
    expect(back.termText).toBe(original.terms.join(" "));
  });

  it("keeps the list when a joined string would not split back into it", () => {
    for (const terms of [[], ["a b", "c"], [""]]) {
      const wire = toWireChunk(chunk(terms));
      expect(fromWireChunk(structuredClone(wire)).terms).toEqual(terms);
    }
  });
});
