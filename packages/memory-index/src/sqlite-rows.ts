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
