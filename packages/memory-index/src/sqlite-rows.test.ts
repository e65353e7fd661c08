import { describe, expect, it } from "vitest";
import { chunkRowSchema, rawChunkRow, toStoredChunk } from "./sqlite-rows.js";

describe("rawChunkRow", () => {
  const row = [
    7,
    "MEMORY.md:1-2:abc",
    "MEMORY.md",
    1,
    2,
    "Memory\u001fPeople",
    "Priya likes tea.",
    "abc",
    "memory",
    5,
    3,
  ];

  it("reads a raw chunks row as the zod-checked object row would be read", () => {
    const [id, chunk_id, path, start_line, end_line, headings, text, hash, source, updated_at, text_length] =
      row;
    const parsed = chunkRowSchema.parse({
      id,
      chunk_id,
      path,
      start_line,
      end_line,
      headings,
      text,
      hash,
      source,
      updated_at,
      text_length,
    });
    expect(rawChunkRow(row)).toEqual({ rowid: 7, chunk: toStoredChunk(parsed) });
  });

  it("rejects rows of another shape", () => {
    expect(() => rawChunkRow(row.slice(0, 10))).toThrow(/Unexpected chunks row/u);
    expect(() => rawChunkRow(row.map((value, index) => (index === 8 ? "elsewhere" : value)))).toThrow(
      TypeError,
    );
    expect(() => rawChunkRow(row.map((value, index) => (index === 10 ? null : value)))).toThrow(TypeError);
    expect(() => rawChunkRow({ id: 7 })).toThrow(TypeError);
  });
});
