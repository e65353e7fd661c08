import { chmodSync, mkdirSync } from "node:fs";
import * as path from "node:path";
import { UserError } from "@almanac/core";
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from "@almanac/durable-write";
import Database from "better-sqlite3";
import * as sqliteVec from "sqlite-vec";
import { IDENTIFIER_JOINERS } from "./text-analysis.js";

/**
 * Bumped when the layout or the chunking changes; an index with another version is dropped and rebuilt
 * from the Markdown. 2: chunks of up to 600 tokens (were 400). 3: each chunk's scoring length stored.
 */
export const SCHEMA_VERSION = "3";

// Terms arrive pre-analysed (text-analysis.ts) and separated by spaces. The tokenizer must not
// split them again: every character an analysed term can hold is a token character here
// (letters, numbers, marks and the identifier joiners), so the only separator left is the space.
// Case folding and diacritics are the analyser's business (`remove_diacritics 0`).
const tokenizer = `unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '${IDENTIFIER_JOINERS}'`;

const tables = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS files (
  path TEXT PRIMARY KEY,
  hash TEXT NOT NULL,
  mtime_ms REAL NOT NULL,
  size INTEGER NOT NULL,
  source TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY,
  chunk_id TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL,
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  headings TEXT NOT NULL,
  text TEXT NOT NULL,
  hash TEXT NOT NULL,
  source TEXT NOT NULL,
  updated_at REAL NOT NULL,
  embedded INTEGER NOT NULL DEFAULT 0,
  text_length INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks (path);
CREATE INDEX IF NOT EXISTS chunks_pending ON chunks (id) WHERE embedded = 0;
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
  terms, content = '', contentless_delete = 1, tokenize = "${tokenizer}"
);
CREATE TABLE IF NOT EXISTS embedding_cache (
  model TEXT NOT NULL,
  hash TEXT NOT NULL,
  dimensions INTEGER NOT NULL,
  vector BLOB NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (model, hash)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS embedding_cache_by_age ON embedding_cache (created_at);
`;

const dropAll = `
DROP TABLE IF EXISTS chunks_vocab;
DROP TABLE IF EXISTS chunks_fts;
DROP TABLE IF EXISTS chunks_vec;
DROP TABLE IF EXISTS chunks;
DROP TABLE IF EXISTS files;
DROP TABLE IF EXISTS embedding_cache;
DROP TABLE IF EXISTS meta;
`;

// Prepared once per connection: the vector size is read on every search and every file write.
const metaReads = new WeakMap<Database.Database, Database.Statement>();

/** Reads a `meta` value. */
export function readMeta(db: Database.Database, key: string): string | undefined {
  let statement = metaReads.get(db);
  if (statement === undefined) {
    statement = db.prepare("SELECT value FROM meta WHERE key = ?");
    metaReads.set(db, statement);
  }
  const row: unknown = statement.get(key);
  if (typeof row === "object" && row !== null && "value" in row && typeof row.value === "string")
    return row.value;
  return undefined;
}

/** Writes a `meta` value. */
export function writeMeta(db: Database.Database, key: string, value: string): void {
  db.prepare(
    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
  ).run(key, value);
}

/** Creates the vector table for `dimensions` (cosine distance) and records the size. */
export function createVectorTable(db: Database.Database, dimensions: number): void {
  db.exec(
    `CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0(embedding float[${dimensions}] distance_metric=cosine)`,
  );
  writeMeta(db, "dimensions", String(dimensions));
}

/**
 * Opens (or creates) the index database: WAL journal, sqlite-vec loaded, schema in place.
 * A file from another schema version is emptied and rebuilt (the Markdown is the source of truth).
 */
export function openSqliteDatabase(file: string): Database.Database {
  if (file !== ":memory:")
    mkdirSync(path.dirname(path.resolve(file)), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  let db: Database.Database;
  try {
    db = new Database(file);
    // The index holds the memory's text: private like the Markdown (SQLite gives its -wal and -shm files the
    // database file's mode when it creates them).
    if (file !== ":memory:") chmodSync(file, PRIVATE_FILE_MODE);
    sqliteVec.load(db);
  } catch (error) {
    throw new UserError("index.open_failed", `Cannot open the memory index at "${file}": ${String(error)}`, {
      cause: error,
    });
  }
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.exec(tables);
  const version = readMeta(db, "schema_version");
  if (version !== undefined && version !== SCHEMA_VERSION) {
    db.exec(dropAll);
    db.exec(tables);
  }
  writeMeta(db, "schema_version", SCHEMA_VERSION);
  return db;
}
