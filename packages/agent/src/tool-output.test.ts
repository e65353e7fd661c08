import { describe, expect, it } from "vitest";
import { cutToolOutput } from "./tool-output.js";

describe("cutToolOutput", () => {
  it("leaves text within the limit untouched", () => {
    expect(cutToolOutput("hello", 5)).toBe("hello");
  });

  it("never splits an emoji in half at the cut", () => {
    const cut = cutToolOutput("ab😀cd", 3);
    expect(cut.startsWith("ab\n")).toBe(true);
    expect(cut).toContain("4 of 6 characters removed");
  });
});
