import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createToolkit } from "@almanac/agent";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fileFor, indexChunks } from "../test/backend-contract.js";
import { createMemorySearch } from "./memory-search.js";
import { createMemoryTools } from "./memory-tools.js";
import { createSqliteIndex } from "./sqlite-index.js";
import type { MemoryIndexBackend } from "./types.js";

let directory: string;
let backend: MemoryIndexBackend;
let rebuilding: string | undefined;

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), "almanac-rebuild-note-"));
  backend = createSqliteIndex({ path: path.join(directory, "index.sqlite") });
  await backend.upsertFile(fileFor("MEMORY.md", "x"), indexChunks("MEMORY.md", "Otters hold hands.\n"));
  rebuilding = "The memory index is being rebuilt; results may be incomplete.";
});

afterEach(async () => {
  await backend.close();
  await rm(directory, { recursive: true, force: true });
});

describe("search while the index is being rebuilt", () => {
  it("says so in the note of every answer, and stops saying it once the rebuild is done", async () => {
    const search = createMemorySearch({ backend, indexNote: () => rebuilding });
    const during = await search.search("otters");
    expect(during.results.map((result) => result.path)).toEqual(["MEMORY.md"]);
    expect(during.note).toMatch(/^The memory index is being rebuilt; results may be incomplete\. Full-text/u);
    rebuilding = undefined;
    expect((await search.search("otters")).note).toMatch(/^Full-text search only/u);
  });

  it("tells the model through memory_search, with no results as well", async () => {
    const toolkit = createToolkit(
      createMemoryTools({
        search: createMemorySearch({ backend, indexNote: () => rebuilding }),
        workspace: directory,
      }),
    );
    const result = await toolkit.execute({
      type: "tool_call",
      id: "call_1",
      name: "memory_search",
      arguments: JSON.stringify({ query: "badgers" }),
    });
    expect(result.isError ?? false).toBe(false);
    const output: unknown = JSON.parse(result.content as string);
    expect(output).toMatchObject({
      results: [],
      note: expect.stringMatching(/being rebuilt.*Nothing in memory shares a word with the query/u),
    });
  });
});
