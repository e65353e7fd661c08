import { describe, expect, it } from "vitest";
import { defaultToolSummaries, summarizeToolOutput, type ToolOutputFacts } from "./tool-summaries.js";

const facts = (name: string, args: unknown, content: string, isError = false): ToolOutputFacts => ({
  name,
  arguments: args,
  content,
  isError,
});

describe("summarizeToolOutput", () => {
  const cases: Array<[string, ToolOutputFacts, RegExp]> = [
    [
      "read_file",
      facts("read_file", { path: "a/b.md" }, "[a/b.md: lines 1-3 of 9]\nx\ny\nz"),
      /read_file "a\/b\.md" \(lines 1-3 of 9\) returned 4 lines/,
    ],
    [
      "write_file",
      facts("write_file", { path: "n.md", content: "…" }, "Wrote n.md (3 lines)."),
      /write_file wrote "n\.md": Wrote n\.md/,
    ],
    [
      "edit_file",
      facts("edit_file", { path: "n.md" }, "Edited n.md: replaced 1 occurrence."),
      /edit_file edited "n\.md"/,
    ],
    [
      "append_file",
      facts("append_file", { path: "log.md" }, "Appended 12 characters."),
      /append_file appended to "log\.md"/,
    ],
    [
      "list_files",
      facts("list_files", { path: "docs" }, "docs/a.md\ndocs/b.md\ndocs/c/"),
      /list_files "docs" listed 3 entries \(first: docs\/a\.md, docs\/b\.md, docs\/c\/\)/,
    ],
    [
      "memory_search",
      facts("memory_search", { query: "OPS-4821" }, "hit 1\nhit 2"),
      /memory_search for "OPS-4821" returned 2 lines/,
    ],
    [
      "memory_get",
      facts("memory_get", { path: "memory/2024-05-01.md" }, "text"),
      /memory_get "memory\/2024-05-01\.md" returned 1 line/,
    ],
    [
      "an unknown tool",
      facts("weather", { city: "Oslo" }, "Sunny\nmore"),
      /weather returned 2 lines, 10 characters; it began: "Sunny"/,
    ],
  ];
  for (const [name, input, expected] of cases) {
    it(`gives ${name} a one-line summary that says what it was`, () => {
      const line = summarizeToolOutput(input, defaultToolSummaries);
      expect(line).toMatch(expected);
      expect(line).not.toContain("\n");
    });
  }

  it("says a failed call failed, with the first line of the error", () => {
    const line = summarizeToolOutput(
      facts("read_file", { path: "x.md" }, "File not found: x.md\nstack…", true),
      defaultToolSummaries,
    );
    expect(line).toContain('read_file of "x.md" failed: File not found: x.md');
  });

  it("ignores arguments that are not an object instead of trusting them", () => {
    const line = summarizeToolOutput(
      facts("read_file", ["not", "an", "object"], "text"),
      defaultToolSummaries,
    );
    expect(line).toContain("read_file a file returned");
  });

  it("falls back to the generic one-liner when a custom one throws", () => {
    const line = summarizeToolOutput(facts("custom", {}, "abc"), {
      custom: () => {
        throw new Error("bug");
      },
    });
    expect(line).toContain("custom returned 1 line, 3 characters");
  });
});
