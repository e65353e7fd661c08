import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { describeBackendContract, fileFor, indexChunks } from "../test/backend-contract.js";
import { scoringLength } from "./hybrid-score.js";
import { createSqliteIndex } from "./sqlite-index.js";

describeBackendContract("SQLite backend contract", async () => {
  const directory = await mkdtemp(path.join(tmpdir(), "almanac-sqlite-contract-"));
  const file = path.join(directory, "index", "memory.sqlite");
  return {
    open: async ({ dimensions }) => createSqliteIndex({ path: file, dimensions }),
    dispose: () => rm(directory, { recursive: true, force: true }),
  };
});

describe("createSqliteIndex", () => {
  let directory: string;
  let file: string;

  beforeEach(async () => {
    directory = await mkdtemp(path.join(tmpdir(), "almanac-sqlite-"));
    file = path.join(directory, "memory.sqlite");
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("uses WAL journaling", async () => {
    const index = createSqliteIndex({ path: file });
    await index.close();
    const db = new Database(file, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    db.close();
  });

  it("learns the vector size from the first vectors when none is configured", async () => {
    const index = createSqliteIndex({ path: file });
    expect((await index.stats()).dimensions).toBeUndefined();
    await index.upsertFile(fileFor("MEMORY.md", "x"), indexChunks("MEMORY.md", "Otters hold hands.\n"), {
      model: "m",
      vectors: [[0.1, 0.2, 0.3]],
    });
    expect((await index.stats()).dimensions).toBe(3);
    await index.close();
  });

  it("drops stored vectors instead of failing when asked to rebuild on a size change", async () => {
    const first = createSqliteIndex({ path: file, dimensions: 3 });
    await first.upsertFile(fileFor("MEMORY.md", "x"), indexChunks("MEMORY.md", "Otters hold hands.\n"), {
      model: "m",
      vectors: [[0.1, 0.2, 0.3]],
    });
    await first.close();
    expect(() => createSqliteIndex({ path: file, dimensions: 4 })).toThrow(/3-dimensional vectors but 4/u);
    const rebuilt = createSqliteIndex({ path: file, dimensions: 4, rebuildOnDimensionsMismatch: true });
    expect(await rebuilt.stats()).toMatchObject({ chunks: 1, embeddedChunks: 0, dimensions: 4 });
    expect((await rebuilt.search({ terms: ["otters"], limit: 5 })).length).toBe(1);
    await rebuilt.close();
  });

  it("serves a chunk read before only until this index or another connection changes the file", async () => {
    const index = createSqliteIndex({ path: file });
    const texts = async () =>
      (await index.search({ terms: ["otters"], limit: 5 })).map((hit) => hit.chunk.text);
    await index.upsertFile(fileFor("MEMORY.md", "a"), indexChunks("MEMORY.md", "Otters hold hands.\n"));
    expect(await texts()).toEqual(["Otters hold hands."]);
    expect(await texts()).toEqual(["Otters hold hands."]);
    // Rowids are reused once rows are deleted: the same rowid now holds another text.
    await index.upsertFile(fileFor("MEMORY.md", "b"), indexChunks("MEMORY.md", "Otters sleep afloat.\n"));
    expect(await texts()).toEqual(["Otters sleep afloat."]);
    expect((await index.termStatistics(["otters"])).documents.get("otters")).toBe(1);

    // Another process syncing the same file.
    const other = createSqliteIndex({ path: file });
    await other.upsertFile(fileFor("MEMORY.md", "c"), indexChunks("MEMORY.md", "Otters crack shells.\n"));
    await other.upsertFile(
      fileFor("memory/2025-01-02.md", "d"),
      indexChunks("memory/2025-01-02.md", "# Day\n\nSaw otters.\n"),
    );
    expect((await texts()).sort()).toEqual(["# Day\n\nSaw otters.", "Otters crack shells."]);
    expect((await index.termStatistics(["otters"])).documents.get("otters")).toBe(2);
    await other.deleteFile("MEMORY.md");
    expect(await texts()).toEqual(["# Day\n\nSaw otters."]);
    await other.close();
    await index.close();
  });

  it("keeps serving the chunks of files a write did not touch", async () => {
    const index = createSqliteIndex({ path: file });
    const chunkOf = async (path: string) =>
      (await index.search({ terms: ["otters"], limit: 5 })).find((hit) => hit.chunk.path === path)?.chunk;
    await index.upsertFile(fileFor("MEMORY.md", "a"), indexChunks("MEMORY.md", "Otters hold hands.\n"));
    const day = "memory/2025-01-02.md";
    await index.upsertFile(fileFor(day, "b"), indexChunks(day, "# Day\n\nSaw otters.\n"));
    const kept = await chunkOf("MEMORY.md");
    await index.upsertFile(fileFor(day, "c"), indexChunks(day, "# Day\n\nSaw two otters.\n"));
    expect(await chunkOf("MEMORY.md")).toBe(kept);
    expect((await chunkOf(day))?.text).toBe("# Day\n\nSaw two otters.");
    await index.close();
  });

  it("searches the same without its chunk cache", async () => {
    const index = createSqliteIndex({ path: file, chunkCacheCharacters: 0 });
    await index.upsertFile(fileFor("MEMORY.md", "a"), indexChunks("MEMORY.md", "Otters hold hands.\n"));
    expect((await index.search({ terms: ["otters"], limit: 5 }))[0]?.chunk.text).toBe("Otters hold hands.");
    expect((await index.search({ terms: ["otters"], limit: 5 }))[0]?.chunk.text).toBe("Otters hold hands.");
    await index.close();
  });

  it("does not read query syntax out of terms", async () => {
    const index = createSqliteIndex({ path: file });
    await index.upsertFile(
      fileFor("MEMORY.md", "x"),
      indexChunks("MEMORY.md", 'Quote " and NEAR( and OR.\n'),
      undefined,
    );
    const hits = await index.search({ terms: ['"', "near(", "or", "*"], limit: 5 });
    expect(hits.map((hit) => hit.chunk.path)).toEqual(["MEMORY.md"]);
    await index.close();
  });

  it("stores each chunk's scoring length, and rebuilds an index of the layout before it", async () => {
    const chunks = indexChunks("memory/2025-01-02.md", "# Day\n\nOtters hold hands, OPS-4821 and 项目.\n");
    const index = createSqliteIndex({ path: file });
    await index.upsertFile(fileFor("memory/2025-01-02.md", "x"), chunks, undefined);
    const [hit] = await index.search({ terms: ["otters"], limit: 5 });
    expect(hit?.chunk.textLength).toBe(scoringLength(chunks[0]!));
    await index.close();

    // A version-2 file (no stored lengths) is emptied on open, so the indexer builds it again.
    const db = new Database(file);
    db.exec(
      "ALTER TABLE chunks DROP COLUMN text_length; UPDATE meta SET value = '2' WHERE key = 'schema_version'",
    );
    db.close();
    const reopened = createSqliteIndex({ path: file });
    expect(await reopened.stats()).toMatchObject({ files: 0, chunks: 0 });
    await reopened.upsertFile(fileFor("memory/2025-01-02.md", "x"), chunks, undefined);
    expect((await reopened.search({ terms: ["otters"], limit: 5 }))[0]?.chunk.textLength).toBe(
      scoringLength(chunks[0]!),
    );
    await reopened.close();
  });
});
