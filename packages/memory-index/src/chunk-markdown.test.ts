import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunkMarkdown, embeddingInput, sha256 } from "./chunk-markdown.js";

/** One token per word: easy to reason about in tests. */
const countWords = (text: string) => text.split(/\s+/u).filter((word) => word !== "").length;

describe("chunkMarkdown", () => {
  it("starts a chunk at each heading and carries the heading path", () => {
    const markdown = [
      "# Projects",
      "intro words here for the projects page",
      "## Apollo",
      "launch moved to May after the beta",
      "### Risks",
      "payments sandbox flaky and slow",
      "## Hermes",
      "paused until next year",
    ].join("\n");
    const chunks = chunkMarkdown("memory/projects.md", markdown, { maxTokens: 40, countTokens: countWords });
    expect(chunks.map((chunk) => [chunk.startLine, chunk.endLine, chunk.headings])).toEqual([
      [1, 2, []],
      [3, 4, ["Projects"]],
      [5, 6, ["Projects", "Apollo"]],
      [7, 8, ["Projects"]],
    ]);
    expect(chunks[2]!.text).toBe("### Risks\npayments sandbox flaky and slow");
    expect(embeddingInput(chunks[2]!)).toBe(
      "Projects › Apollo\n\n### Risks\npayments sandbox flaky and slow",
    );
    expect(chunks[2]!.hash).toBe(sha256(embeddingInput(chunks[2]!)));
    expect(chunks[2]!.id).toBe(`memory/projects.md:5-6:${chunks[2]!.hash.slice(0, 16)}`);
  });

  it("ignores headings inside fenced code", () => {
    const markdown = "# Notes\nsome text here\n```sh\n# not a heading\necho hi\n```\nmore text";
    const chunks = chunkMarkdown("MEMORY.md", markdown, { maxTokens: 100, countTokens: countWords });
    expect(chunks).toHaveLength(1);
    expect(chunks[0]).toMatchObject({ startLine: 1, endLine: 7 });
  });

  it("cuts long sections on whole lines with the configured overlap", () => {
    const lines = Array.from({ length: 12 }, (_, index) => `line ${index + 1} has five words`);
    const chunks = chunkMarkdown("MEMORY.md", lines.join("\n"), {
      maxTokens: 30,
      overlapTokens: 12,
      countTokens: countWords,
    });
    expect(chunks.map((chunk) => [chunk.startLine, chunk.endLine])).toEqual([
      [1, 5],
      [4, 8],
      [7, 11],
      [10, 12],
    ]);
  });

  it("splits a line longer than a chunk into pieces of the same line", () => {
    const long = Array.from({ length: 50 }, (_, index) => `word${index}`).join(" ");
    const chunks = chunkMarkdown("MEMORY.md", `before\n${long}\nafter`, {
      maxTokens: 20,
      overlapTokens: 0,
      countTokens: countWords,
    });
    expect(chunks.every((chunk) => chunk.tokens <= 20)).toBe(true);
    expect(chunks.filter((chunk) => chunk.startLine <= 2 && chunk.endLine >= 2)).toHaveLength(3);
    expect(chunks.map((chunk) => chunk.text).join("")).toBe(`before\n${long}\nafter`);
  });

  it("leaves blank lines at the edges out, so they do not change a chunk's hash", () => {
    const [a] = chunkMarkdown("MEMORY.md", "\n\nTea, not coffee.\n\n\n");
    const [b] = chunkMarkdown("MEMORY.md", "Tea, not coffee.\n");
    expect(a).toMatchObject({ startLine: 3, endLine: 3, text: "Tea, not coffee." });
    expect(a!.hash).toBe(b!.hash);
    expect(chunkMarkdown("MEMORY.md", "\n  \n")).toEqual([]);
  });

  it("always moves forward, even when the overlap would hold all of a chunk's text", () => {
    const chunks = chunkMarkdown(
      "MEMORY.md",
      "\n# Title\n\nalpha alpha alpha alpha alpha alpha alpha alpha",
      {
        maxTokens: 13,
        overlapTokens: 4,
        countTokens: countWords,
      },
    );
    expect(chunks.map((chunk) => [chunk.startLine, chunk.endLine])).toEqual([
      [2, 2],
      [4, 4],
    ]);
  });

  it("covers every non-blank line, in order, within the token limit", () => {
    const line = fc.oneof(
      fc.constant(""),
      fc.constantFrom("# Title", "## Section", "### Sub"),
      fc
        .array(fc.constantFrom("alpha", "beta", "gamma", "项目", "OPS-1"), { minLength: 1, maxLength: 8 })
        .map((words) => words.join(" ")),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 60 }), fc.integer({ min: 8, max: 40 }), (lines, maxTokens) => {
        const chunks = chunkMarkdown("MEMORY.md", lines.join("\n"), {
          maxTokens,
          overlapTokens: 4,
          countTokens: countWords,
        });
        const covered = new Set<number>();
        let previousStart = 0;
        for (const chunk of chunks) {
          expect(chunk.startLine).toBeGreaterThan(previousStart);
          expect(chunk.tokens).toBeLessThanOrEqual(maxTokens + 1);
          expect(chunk.text).toBe(lines.slice(chunk.startLine - 1, chunk.endLine).join("\n"));
          previousStart = chunk.startLine;
          for (let at = chunk.startLine; at <= chunk.endLine; at += 1) covered.add(at);
        }
        lines.forEach((text, index) => {
          if (text.trim() !== "") expect(covered.has(index + 1)).toBe(true);
        });
      }),
    );
  });
});
