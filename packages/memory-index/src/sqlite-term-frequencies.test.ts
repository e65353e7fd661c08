import { afterEach, describe, expect, it } from "vitest";
import { openSqliteDatabase } from "./sqlite-schema.js";
import { createTermFrequencies } from "./sqlite-term-frequencies.js";

/** An index database holding one chunk per entry of `texts` (rowids 1…n), each text its terms. */
function databaseOf(texts: readonly string[]) {
  const db = openSqliteDatabase(":memory:");
  const chunk = db.prepare(
    `INSERT INTO chunks (id, chunk_id, path, start_line, end_line, headings, text, hash, source, updated_at, text_length)
     VALUES (?, ?, 'MEMORY.md', 1, 1, '', ?, 'h', 'memory', 0, 1)`,
  );
  const fts = db.prepare("INSERT INTO chunks_fts (rowid, terms) VALUES (?, ?)");
  texts.forEach((text, index) => {
    chunk.run(index + 1, `c${index + 1}`, text);
    fts.run(index + 1, text);
  });
  return db;
}

describe("createTermFrequencies", () => {
  let db: ReturnType<typeof databaseOf> | undefined;
  afterEach(() => db?.close());

  it("counts every match of a term when the index has fewer chunks than the limit", () => {
    db = databaseOf(["otter river", "otter", "badger", "otter otter", "river"]);
    const frequencies = createTermFrequencies(db, 6);
    expect(frequencies.count("otter", 5)).toBe(3);
    expect(frequencies.count("river", 5)).toBe(2);
    expect(frequencies.count("heron", 5)).toBe(0);
  });

  it("counts exactly below the limit on a larger index, and extrapolates from the newest matches at it", () => {
    const texts = Array.from({ length: 10 }, (_, index) => (index % 2 === 1 ? "otter even" : "odd"));
    db = databaseOf([...texts.slice(0, 9), "otter even last"]);
    const frequencies = createTermFrequencies(db, 4);
    expect(frequencies.count("last", 10)).toBe(1);
    // The 4 newest of "otter" are rowids 10, 8, 6, 4: they span 7 of 10 ids, so ~4 × 10 / 7.
    expect(frequencies.count("otter", 10)).toBe(6);
    expect(frequencies.count("odd", 10)).toBe(5);
  });

  it("answers from its cache until told to forget", () => {
    db = databaseOf(["otter", "otter"]);
    const frequencies = createTermFrequencies(db, 6);
    expect(frequencies.count("otter", 2)).toBe(2);
    db.prepare("INSERT INTO chunks_fts (rowid, terms) VALUES (3, 'otter')").run();
    expect(frequencies.count("otter", 3)).toBe(2);
    frequencies.forget();
    expect(frequencies.count("otter", 3)).toBe(3);
  });
});
