import { describe, expect, it } from "vitest";
import { toWireAnalysis, withWireAnalysis } from "./index-worker-protocol.js";
import type { MemoryChunk } from "./types.js";

const chunk: MemoryChunk = {
  id: "memory/a.md:1-2:0123456789abcdef",
  path: "memory/a.md",
  startLine: 1,
  endLine: 2,
  headings: ["Travel"],
  text: "Passport renewal",
  hash: "0123456789abcdef",
  tokens: 3,
};

describe("the index worker's analysis form", () => {
  it("sends the terms as one string and gives the same terms back", () => {
    const terms = ["passport", "renewal", "", "项目", "项目部署"];
    const wire = toWireAnalysis(terms, 2);
    expect(wire).toEqual({ termText: "passport renewal  项目 项目部署", textLength: 2 });
    const back = withWireAnalysis(chunk, structuredClone(wire));
    expect(back.terms).toEqual(terms);
    expect(back.termText).toBe(terms.join(" "));
    expect(back).toMatchObject({ ...chunk, textLength: 2 });
  });

  it("keeps the list when a joined string would not split back into it", () => {
    for (const terms of [[], ["a b", "c"], [""]]) {
      const back = withWireAnalysis(chunk, structuredClone(toWireAnalysis(terms, 0)));
      expect(back.terms).toEqual(terms);
    }
    expect(toWireAnalysis(["a b", "c"], 0)).toEqual({ terms: ["a b", "c"], textLength: 0 });
  });
});
