import { describe, expect, it } from "vitest";
import { lineAt, lineStartsOf } from "./line-starts.js";

describe("lineStartsOf / lineAt", () => {
  it("finds the line of every offset, newlines belonging to the line they end", () => {
    const text = "ab\n\ncd\nlast";
    const starts = lineStartsOf(text);
    expect(starts).toEqual([0, 3, 4, 7]);
    const lines = [...text].map((_, offset) => lineAt(starts, offset));
    expect(lines).toEqual([0, 0, 0, 1, 2, 2, 2, 3, 3, 3, 3]);
    expect(lineStartsOf("")).toEqual([0]);
    expect(lineAt([0], 5)).toBe(0);
  });
});
