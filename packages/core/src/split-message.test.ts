import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitMessage } from "./split-message.js";

/** True when no code fence is left open at the end (CommonMark: only a bare fence closes one). */
function fencesBalanced(chunk: string): boolean {
  let open: string | undefined;
  for (const line of chunk.split("\n")) {
    const trimmed = line.trim();
    if (open === undefined) {
      const opening = /^(`{3,}|~{3,})/.exec(trimmed);
      if (opening) open = opening[1];
    } else if (trimmed.startsWith(open) && /^[`~]+$/.test(trimmed)) {
      open = undefined;
    }
  }
  return open === undefined;
}

describe("splitMessage", () => {
  it("leaves a short message whole", () => {
    expect(splitMessage("hello", 2000)).toEqual(["hello"]);
    expect(splitMessage("", 2000)).toEqual([]);
  });

  it("cuts on paragraph boundaries first", () => {
    const paragraph = "word ".repeat(60).trim();
    const chunks = splitMessage([paragraph, paragraph, paragraph].join("\n\n"), 700);
    expect(chunks).toEqual([`${paragraph}\n\n${paragraph}`, paragraph]);
  });

  it("keeps a code block intact when it fits in a chunk", () => {
    const prose = "intro ".repeat(300).trim();
    const code = [
      "```ts",
      ...Array.from({ length: 20 }, (_, index) => `const value${index} = ${index};`),
      "```",
    ].join("\n");
    const chunks = splitMessage(`${prose}\n\n${code}\n\nafter`, 2000);
    expect(chunks.some((chunk) => chunk.includes(code))).toBe(true);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(2000);
  });

  it("re-wraps a code block longer than the limit in its fence, language kept", () => {
    const code = [
      "```python",
      ...Array.from({ length: 200 }, (_, index) => `print(${index})  # line`),
      "```",
    ].join("\n");
    const chunks = splitMessage(code, 500);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(500);
      expect(chunk.startsWith("```python\n")).toBe(true);
      expect(chunk.endsWith("\n```")).toBe(true);
    }
    const lines = chunks.flatMap((chunk) => chunk.split("\n").slice(1, -1));
    expect(lines).toHaveLength(200);
  });

  it("splits a single long line without spaces at the limit", () => {
    const chunks = splitMessage("x".repeat(5000), 2000);
    expect(chunks.map((chunk) => chunk.length)).toEqual([2000, 2000, 1000]);
  });

  it("treats a fence line with an info string inside a code block as content, not as a closing fence", () => {
    const text = ["```", "   ", "```js", "        ", "", "```", "", "```js", "   "].join("\n");
    const chunks = splitMessage(text, 32);
    expect(chunks).toEqual(["```\n   \n```js\n        \n\n```", "```js\n   \n```"]);
    for (const chunk of chunks) expect(fencesBalanced(chunk)).toBe(true);
  });

  it("never exceeds the limit, never leaves a fence open and loses no words (property)", () => {
    const line = fc.oneof(
      fc.constant("```js"),
      fc.constant("```"),
      fc.constant(""),
      fc.string({ maxLength: 120 }).map((text) => text.replace(/[`~\n\r]/g, "a")),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 80 }), fc.integer({ min: 40, max: 400 }), (lines, limit) => {
        const text = lines.join("\n");
        const chunks = splitMessage(text, limit);
        for (const chunk of chunks) {
          expect(chunk.length).toBeLessThanOrEqual(limit);
          // A message that fits is sent as written; once split, every chunk closes what it opens.
          if (chunks.length > 1 || fencesBalanced(text)) expect(fencesBalanced(chunk)).toBe(true);
        }
        const words = (value: string) =>
          value.split(/\s+/).filter((word) => word !== "" && !/^[`~]{3,}\w*$/.test(word));
        expect(chunks.flatMap(words).join("")).toBe(words(text).join(""));
      }),
    );
  });
});
