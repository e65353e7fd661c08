import type Database from "better-sqlite3";
import { chunkColumns } from "./sqlite-rows.js";
import type { VectorStatements } from "./sqlite-vector-search.js";

/** The SQLite index's prepared statements, made once per connection. */
export function prepareIndexStatements(db: Database.Database) {
  return {
    chunkIdsOfPath: db.prepare("SELECT id FROM chunks WHERE path = ?").pluck(),
    deleteChunksOfPath: db.prepare("DELETE FROM chunks WHERE path = ?"),
    deleteFts: db.prepare("DELETE FROM chunks_fts WHERE rowid = ?"),
    insertFts: db.prepare("INSERT INTO chunks_fts (rowid, terms) VALUES (?, ?)"),
    upsertFile: db.prepare(
      "INSERT OR REPLACE INTO files (path, hash, mtime_ms, size, source) VALUES (@path, @hash, @mtimeMs, @size, @source)",
    ),
    deleteFile: db.prepare("DELETE FROM files WHERE path = ?"),
    insertChunk: db.prepare(
      `INSERT INTO chunks (chunk_id, path, start_line, end_line, headings, text, hash, source, updated_at, embedded, text_length)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    fileState: db.prepare("SELECT path, hash, mtime_ms, size, source FROM files WHERE path = ?"),
    listFiles: db.prepare("SELECT path, hash, mtime_ms, size, source FROM files ORDER BY path"),
    textSearch: db
      .prepare(
        "SELECT rowid, -bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
      )
      .raw(),
    recentTextSearch: db
      .prepare(
        "SELECT rowid, 0 AS score FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
      )
      .raw(),
    chunksById: db
      .prepare(`SELECT ${chunkColumns} FROM chunks WHERE id IN (SELECT value FROM json_each(?))`)
      .raw(),
    pending: db.prepare(`SELECT ${chunkColumns} FROM chunks WHERE embedded = 0 ORDER BY id LIMIT ?`),
    chunkForVector: db.prepare("SELECT id FROM chunks WHERE chunk_id = ? AND hash = ?").pluck(),
    markEmbedded: db.prepare("UPDATE chunks SET embedded = 1 WHERE id = ?"),
    cacheInsert: db.prepare(
      "INSERT OR IGNORE INTO embedding_cache (model, hash, dimensions, vector, created_at) VALUES (?, ?, ?, ?, ?)",
    ),
    cacheLookup: db.prepare(
      "SELECT hash, vector FROM embedding_cache WHERE model = ? AND hash IN (SELECT value FROM json_each(?))",
    ),
    count: (table: string) => db.prepare(`SELECT count(*) AS count FROM ${table}`),
    dataVersion: db.prepare("PRAGMA data_version").pluck(),
  };
}

/** The statements over sqlite-vec's `chunks_vec` (made once the table exists: its size is learnt). */
export function prepareVectorStatements(db: Database.Database): VectorStatements {
  return {
    insert: db.prepare("INSERT INTO chunks_vec (rowid, embedding) VALUES (?, ?)"),
    remove: db.prepare("DELETE FROM chunks_vec WHERE rowid = ?"),
    knn: db.prepare("SELECT rowid, distance AS score FROM chunks_vec WHERE embedding MATCH ? AND k = ?"),
    get: db.prepare("SELECT rowid, embedding FROM chunks_vec WHERE rowid = ?"),
  };
}
