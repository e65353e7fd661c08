import { z } from "zod";
import type { IndexedFile, StoredChunk } from "./types.js";

// Row shapes of the SQLite backend and the FTS5 query builders. Rows come back from better-sqlite3
// as `unknown`; they are validated, not cast.

/** Joins a chunk's heading path in one column (a control character no heading contains). */
export const headingSeparator = "\u001f";
const sourceSchema = z.enum(["memory", "daily", "notes"]);

/** A `chunks` row, as selected with {@link chunkColumns}. */
export const chunkRowSchema = z.object({
  id: z.number(),
  chunk_id: z.string(),
  path: z.string(),
  start_line: z.number(),
  end_line: z.number(),
  headings: z.string(),
  text: z.string(),
  hash: z.string(),
  source: sourceSchema,
  updated_at: z.number(),
  text_length: z.number(),
});
/** The columns {@link chunkRowSchema} expects. */
export const chunkColumns =
  "id, chunk_id, path, start_line, end_line, headings, text, hash, source, updated_at, text_length";
/** A `files` row. */
export const fileRowSchema = z.object({
  path: z.string(),
  hash: z.string(),
  mtime_ms: z.number(),
  size: z.number(),
  source: sourceSchema,
});
/** A scored candidate (BM25 or vector distance). */
export const scoreRowSchema = z.object({ rowid: z.number(), score: z.number() });
/** A stored vector. */
export const vectorRowSchema = z.object({ rowid: z.number(), embedding: z.instanceof(Buffer) });
/** An embedding-cache entry. */
export const cacheRowSchema = z.object({ hash: z.string(), vector: z.instanceof(Buffer) });
/** A `count(*) AS count` row. */
export const countSchema = z.object({ count: z.number() });

const sources: ReadonlySet<unknown> = new Set(sourceSchema.options);

/**
 * A `chunks` row selected with {@link chunkColumns} in raw mode (an array), checked field by field, with its
 * rowid: every search fetches its candidates this way, where parsing objects with zod was a tenth of the time.
 */
export function rawChunkRow(row: unknown): { rowid: number; chunk: StoredChunk } {
  if (
    !Array.isArray(row) ||
    row.length !== 11 ||
    typeof row[0] !== "number" ||
    typeof row[1] !== "string" ||
    typeof row[2] !== "string" ||
    typeof row[3] !== "number" ||
    typeof row[4] !== "number" ||
    typeof row[5] !== "string" ||
    typeof row[6] !== "string" ||
    typeof row[7] !== "string" ||
    !sources.has(row[8]) ||
    typeof row[9] !== "number" ||
    typeof row[10] !== "number"
  )
    throw new TypeError(`Unexpected chunks row: ${JSON.stringify(row).slice(0, 200)}`);
  return {
    rowid: row[0],
    chunk: toStoredChunk({
      id: row[0],
      chunk_id: row[1],
      path: row[2],
      start_line: row[3],
      end_line: row[4],
      headings: row[5],
      text: row[6],
      hash: row[7],
      source: row[8] as z.infer<typeof sourceSchema>,
      updated_at: row[9],
      text_length: row[10],
    }),
  };
}

/** A chunk row as the backend interface returns it. */
export function toStoredChunk(row: z.infer<typeof chunkRowSchema>): StoredChunk {
  return {
    id: row.chunk_id,
    path: row.path,
    startLine: row.start_line,
    endLine: row.end_line,
    headings: row.headings === "" ? [] : row.headings.split(headingSeparator),
    text: row.text,
    hash: row.hash,
    source: row.source,
    updatedAt: row.updated_at,
    textLength: row.text_length,
  };
}

/** A file row as the backend interface returns it. */
export function toFile(row: z.infer<typeof fileRowSchema>): IndexedFile {
  return { path: row.path, hash: row.hash, mtimeMs: row.mtime_ms, size: row.size, source: row.source };
}

/** An FTS5 query matching any of the terms, each quoted so no term is read as query syntax. */
export function anyOf(terms: readonly string[]): string {
  return terms.map((term) => `"${term.replaceAll('"', '""')}"`).join(" OR ");
}

/** An FTS5 query matching a term of every group. */
export function allOf(groups: readonly (readonly string[])[]): string {
  return groups.map((group) => `(${anyOf(group)})`).join(" AND ");
}
