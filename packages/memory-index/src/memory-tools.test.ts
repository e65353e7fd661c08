import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createToolkit, type Toolkit } from "@almanac/agent";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { waitFor } from "../test/test-support.js";
import { createMemoryIndexer } from "./memory-indexer.js";
import { createMemorySearch } from "./memory-search.js";
import { createMemoryTools } from "./memory-tools.js";
import { createSqliteIndex } from "./sqlite-index.js";
import type { MemoryIndexBackend } from "./types.js";

let root: string;
let workspace: string;
let backend: MemoryIndexBackend;
let toolkit: Toolkit;

const searchOutput = z.object({
  mode: z.enum(["hybrid", "text"]),
  note: z.string().optional(),
  results: z.array(
    z.object({
      path: z.string(),
      startLine: z.number(),
      endLine: z.number(),
      date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/u),
      score: z.number(),
      source: z.string(),
      snippet: z.string(),
    }),
  ),
});

async function call(name: string, args: Record<string, unknown>) {
  return toolkit.execute({ type: "tool_call", id: "call_1", name, arguments: JSON.stringify(args) });
}

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), "almanac-tools-"));
  workspace = path.join(root, "workspace");
  await mkdir(path.join(workspace, "memory"), { recursive: true });
  await writeFile(path.join(workspace, "MEMORY.md"), "line one\nline two\nline three\nline four\n");
  await writeFile(path.join(workspace, "secrets.md"), "SECRET-INSIDE\n");
  await writeFile(path.join(root, "outside.md"), "SECRET-OUTSIDE\n");
  backend = createSqliteIndex({ path: path.join(root, "memory.sqlite") });
  toolkit = createToolkit(createMemoryTools({ search: createMemorySearch({ backend }), workspace }));
});

afterEach(async () => {
  await backend.close();
  await rm(root, { recursive: true, force: true });
});

describe("memory_search", () => {
  it("finds a note written on disk while watching, without a restart", async () => {
    const indexer = createMemoryIndexer({ workspace, backend, debounceMs: 20 });
    try {
      await indexer.sync();
      await indexer.watch();
      await writeFile(
        path.join(workspace, "memory", "2025-06-01.md"),
        "# Car\n\nThe Skoda needs new tyres before July.\n",
      );
      let output: z.infer<typeof searchOutput> | undefined;
      await waitFor(
        async () => {
          output = searchOutput.parse(
            JSON.parse((await call("memory_search", { query: "Skoda tyres" })).content),
          );
          return output.results.length > 0;
        },
        5000,
        "the new note",
      );
      expect(output).toMatchObject({
        mode: "text",
        note: expect.stringContaining("Full-text search only"),
        results: [
          { path: "memory/2025-06-01.md", startLine: 1, endLine: 3, date: "2025-06-01", source: "daily" },
        ],
      });
    } finally {
      await indexer.close();
    }
  });

  it("says plainly when nothing shares a word with the query", async () => {
    const result = await call("memory_search", { query: "zeppelin" });
    const output = searchOutput.parse(JSON.parse(result.content));
    expect(output.results).toEqual([]);
    expect(output.note).toContain("Nothing in memory shares a word with the query");
    expect(result.isError).toBeUndefined();
  });

  it("dates every passage, so the model can tell the newest of two statements", async () => {
    await writeFile(path.join(workspace, "memory", "2025-03-01.md"), "The book club meets at the library.\n");
    await writeFile(path.join(workspace, "memory", "2025-05-10.md"), "The book club moved to the café.\n");
    await writeFile(path.join(workspace, "MEMORY.md"), "Book club: first Tuesday of the month.\n");
    const edited = new Date(Date.UTC(2025, 5, 2, 10, 0));
    await utimes(path.join(workspace, "MEMORY.md"), edited, edited);
    await createMemoryIndexer({ workspace, backend }).sync();
    const output = searchOutput.parse(
      JSON.parse((await call("memory_search", { query: "book club" })).content),
    );
    expect(Object.fromEntries(output.results.map((result) => [result.path, result.date]))).toEqual({
      "memory/2025-03-01.md": "2025-03-01",
      "memory/2025-05-10.md": "2025-05-10",
      "MEMORY.md": "2025-06-02",
    });
  });

  it("reports a failing index as a tool error instead of throwing", async () => {
    await backend.close();
    const result = await call("memory_search", { query: "anything" });
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/^memory_search failed: /u);
  });
});

describe("memory_get", () => {
  it("reads lines of MEMORY.md and of files under memory/", async () => {
    await writeFile(path.join(workspace, "memory", "note.md"), "alpha\nbeta\n");
    expect((await call("memory_get", { path: "MEMORY.md", fromLine: 2, lines: 2 })).content).toBe(
      "MEMORY.md lines 2-3 of 4 (more follows: call again with fromLine 4):\nline two\nline three",
    );
    expect((await call("memory_get", { path: "./memory/note.md" })).content).toBe(
      "memory/note.md lines 1-2 of 2:\nalpha\nbeta",
    );
  });

  it.each([
    ["secrets.md", "memory_get reads only MEMORY.md and files under memory/"],
    ["../outside.md", "leaves the workspace root"],
    ["/etc/passwd", "absolute paths are refused"],
    ["memory/../secrets.md", "memory_get reads only MEMORY.md"],
    ["memory", "memory_get reads only MEMORY.md"],
    ["memory/missing.md", "does not exist. Use memory_search"],
  ])("refuses %s with a readable error", async (requested, message) => {
    const result = await call("memory_get", { path: requested });
    expect(result.isError).toBe(true);
    expect(result.content).toContain(message);
  });

  it("refuses symlinks that lead out of memory/ or out of the workspace", async () => {
    await symlink(path.join(workspace, "secrets.md"), path.join(workspace, "memory", "inside.md"));
    await symlink(path.join(root, "outside.md"), path.join(workspace, "memory", "outside.md"));
    for (const requested of ["memory/inside.md", "memory/outside.md"]) {
      const result = await call("memory_get", { path: requested });
      expect(result.isError).toBe(true);
      expect(result.content).not.toContain("SECRET-INSIDE");
      expect(result.content).not.toContain("SECRET-OUTSIDE");
    }
  });

  it("says where the file ends when fromLine is past it", async () => {
    const result = await call("memory_get", { path: "MEMORY.md", fromLine: 9 });
    expect(result).toMatchObject({
      isError: true,
      content: '"MEMORY.md" has 4 lines; fromLine 9 is past the end.',
    });
  });
});

describe("the output budget", () => {
  const countTokens = (text: string) => Math.ceil(text.length / 4);

  it("keeps a search result within the budget: fewer passages, then shorter snippets, the best hit's line always shown", async () => {
    // Twelve long logs that all match "deploy", one of which holds the identifier far down a long chunk.
    for (let day = 1; day <= 12; day += 1) {
      const lines = Array.from(
        { length: 24 },
        (_, index) =>
          `- Alice: the deploy of service ${day}-${index} went fine after the usual checks and a long review.`,
      );
      if (day === 7) lines[21] = "- Alice: remember DEPLOY-K7: the deploy freeze starts on the 14th.";
      await writeFile(
        path.join(workspace, "memory", `2025-06-${String(day).padStart(2, "0")}.md`),
        lines.join("\n"),
      );
    }
    await createMemoryIndexer({ workspace, backend }).sync();
    const search = createMemorySearch({ backend });
    const unbounded = createToolkit(createMemoryTools({ search, workspace }));
    const whole = (
      await unbounded.execute({
        type: "tool_call",
        id: "call_1",
        name: "memory_search",
        arguments: JSON.stringify({ query: "DEPLOY-K7 deploy", minScore: 0 }),
      })
    ).content;
    expect(countTokens(whole)).toBeGreaterThan(600);

    for (const budget of [600, 300, 150]) {
      const bounded = createToolkit(
        createMemoryTools({ search, workspace, maxOutputTokens: budget, countTokens }),
      );
      const result = await bounded.execute({
        type: "tool_call",
        id: "call_1",
        name: "memory_search",
        arguments: JSON.stringify({ query: "DEPLOY-K7 deploy", minScore: 0 }),
      });
      expect(countTokens(result.content)).toBeLessThanOrEqual(budget);
      const output = searchOutput
        .extend({ omitted: z.string().optional() })
        .parse(JSON.parse(result.content));
      expect(output.results[0]!.snippet).toContain("DEPLOY-K7: the deploy freeze starts on the 14th.");
      expect(output.omitted).toMatch(/more passages left out to fit the context/u);
    }
  });

  it("reads fewer lines of a long file and says where to go on", async () => {
    const lines = Array.from(
      { length: 400 },
      (_, index) => `line ${index + 1} of a long memory file with words`,
    );
    await writeFile(path.join(workspace, "MEMORY.md"), lines.join("\n"));
    const bounded = createToolkit(
      createMemoryTools({
        search: createMemorySearch({ backend }),
        workspace,
        maxOutputTokens: 200,
        countTokens,
      }),
    );
    const result = await bounded.execute({
      type: "tool_call",
      id: "call_1",
      name: "memory_get",
      arguments: JSON.stringify({ path: "MEMORY.md", fromLine: 10 }),
    });
    expect(countTokens(result.content)).toBeLessThanOrEqual(200);
    const shown =
      /^MEMORY\.md lines 10-(\d+) of 400 \(more follows: call again with fromLine (\d+)\):\n/u.exec(
        result.content,
      );
    expect(shown).not.toBeNull();
    expect(Number(shown![2])).toBe(Number(shown![1]) + 1);
    expect(result.content).toContain("line 10 of a long memory file");
  });
});

describe("createMemoryTools", () => {
  it("builds the argument schemas once: toolkits made turn after turn share them, per scope and limits", () => {
    const search = createMemorySearch({ backend });
    const parameters = (tools: ReturnType<typeof createMemoryTools>) => tools.map((tool) => tool.parameters);
    const first = parameters(createMemoryTools({ search, workspace }));
    expect(parameters(createMemoryTools({ search, workspace }))).toEqual(first);
    expect(parameters(createMemoryTools({ search, workspace }))[1]).toBe(first[1]);
    expect(parameters(createMemoryTools({ search, workspace }))[0]).toBe(first[0]);
    const shared = parameters(
      createMemoryTools({
        search,
        workspace,
        scope: { kind: "shared", id: "discord:main:group:g1", folder: "discord-g1" },
      }),
    );
    expect(shared[1]).not.toBe(first[1]);
    expect(z.toJSONSchema(shared[1]!)).toMatchObject({
      properties: { path: { description: expect.stringContaining("shared/") } },
    });
    expect(parameters(createMemoryTools({ search, workspace, maxGetLines: 50 }))[1]).not.toBe(first[1]);
  });
});
