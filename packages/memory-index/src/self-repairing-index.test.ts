import { randomBytes } from "node:crypto";
import { mkdtemp, open, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fileFor, indexChunks } from "../test/backend-contract.js";
import type { IndexRepair } from "./self-repairing-index.js";
import { createSqliteIndex } from "./sqlite-index.js";
import type { MemoryIndexBackend } from "./types.js";

let directory: string;
let file: string;
let repairs: IndexRepair[];

function openIndex(): MemoryIndexBackend {
  return createSqliteIndex({ path: file, onRepair: (repair) => repairs.push(repair) });
}

/** An index holding `count` notes, closed (so everything is in the main file). */
async function writeIndex(count: number): Promise<void> {
  const index = openIndex();
  for (let note = 0; note < count; note += 1) {
    const text = `# Note ${note}\n\nOtters number ${note} hold hands while they sleep. ${"filler ".repeat(60)}\n`;
    await index.upsertFile(
      fileFor(`memory/note-${note}.md`, text),
      indexChunks(`memory/note-${note}.md`, text),
    );
  }
  await index.close();
}

/** Still usable: takes a note and finds it again. */
async function expectUsable(index: MemoryIndexBackend): Promise<void> {
  await index.upsertFile(fileFor("MEMORY.md", "x"), indexChunks("MEMORY.md", "Badgers dig setts.\n"));
  const hits = await index.search({ terms: ["badgers"], limit: 5 });
  expect(hits.map((hit) => hit.chunk.path)).toEqual(["MEMORY.md"]);
}

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), "almanac-repair-"));
  file = path.join(directory, "index.sqlite");
  repairs = [];
});

afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

describe("a damaged index file", () => {
  it("moves random bytes aside, keeping them, and opens an empty index in their place", async () => {
    const garbage = randomBytes(8192);
    await writeFile(file, garbage);
    const index = openIndex();
    expect(repairs).toHaveLength(1);
    expect(repairs[0]?.reason).toMatch(/SQLITE_NOTADB/u);
    expect(path.basename(repairs[0]?.movedTo ?? "")).toMatch(/^index\.sqlite\.corrupt-\d{4}-\d\d-\d\dT/u);
    expect(await readFile(repairs[0]?.movedTo ?? "")).toEqual(garbage);
    expect(await index.stats()).toMatchObject({ files: 0, chunks: 0 });
    await expectUsable(index);
    await index.close();
  });

  it("moves a truncated index aside, at open or at the first query that meets the damage", async () => {
    await writeIndex(40);
    await truncate(file, Math.floor((await stat(file)).size / 3));
    const index = openIndex();
    await index.search({ terms: ["otters"], limit: 50 });
    await index.listFiles();
    expect(repairs).toHaveLength(1);
    expect(repairs[0]?.reason).toMatch(/SQLITE_CORRUPT/u);
    await expectUsable(index);
    await index.close();
  });

  it("repairs corruption found by a query at run time, once, and answers from the fresh index", async () => {
    await writeIndex(40);
    const pages = (await stat(file)).size / 4096;
    const handle = await open(file, "r+");
    await handle.write(Buffer.alloc(4096 * 4, 0x41), 0, 4096 * 4, 4096 * Math.floor(pages / 2));
    await handle.close();
    const index = openIndex();
    // Both calls start on the damaged file; only one repairs it.
    const [found] = await Promise.all([
      index.search({ terms: ["otters"], limit: 50 }),
      index.search({ terms: ["hands"], limit: 50 }),
    ]);
    expect(found).toEqual([]);
    expect(await index.listFiles()).toEqual([]);
    expect(repairs).toHaveLength(1);
    await expectUsable(index);
    await index.close();
  });

  it("moves another application's database aside untouched instead of writing into it", async () => {
    const foreign = new Database(file);
    foreign.exec(
      "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5)",
    );
    foreign.close();
    const index = openIndex();
    expect(repairs[0]?.reason).toMatch(/not an Almanac memory index.*invoices/u);
    const moved = new Database(repairs[0]?.movedTo ?? "", { readonly: true });
    expect(moved.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all()).toEqual([
      "invoices",
    ]);
    moved.close();
    await expectUsable(index);
    await index.close();
  });

  it("moves the -wal and -shm files aside with the database", async () => {
    await writeFile(file, randomBytes(4096));
    await writeFile(`${file}-wal`, randomBytes(4096));
    await writeFile(`${file}-shm`, randomBytes(4096));
    const index = openIndex();
    const movedTo = path.basename(repairs[0]?.movedTo ?? "");
    expect((await readdir(directory)).filter((name) => name.includes("corrupt")).sort()).toEqual([
      movedTo,
      `${movedTo}-shm`,
      `${movedTo}-wal`,
    ]);
    await index.close();
  });

  it("uses a zero-byte file as an empty index and a good index beside a garbage -wal as it is", async () => {
    await writeFile(file, "");
    const empty = openIndex();
    await expectUsable(empty);
    await empty.close();
    await writeIndex(3);
    await writeFile(`${file}-wal`, randomBytes(10_000));
    const index = openIndex();
    expect(await index.stats()).toMatchObject({ files: 4 });
    expect(repairs).toEqual([]);
    await index.close();
  });
});
