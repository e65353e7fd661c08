import type { ScopePathFilter } from "@almanac/memory-files";
import type Database from "better-sqlite3";
import { addScoreRows } from "./sqlite-score-rows.js";

/** Most vector neighbours asked of sqlite-vec in one query (its own limit is 4096). */
const MAX_KNN = 4096;

/** Path-filtered queries of the SQLite backend: a memory scope sees only its own files, ranked among themselves. */
export interface SqliteScopeQueries {
  /** Text matches (BM25 or newest first) among the chunks whose path passes the filter. */
  text(expression: string, limit: number, rank: boolean, filter: ScopePathFilter): Map<number, number>;
  /**
   * Rowids of the chunks passing the filter when they are few enough to compare with the query vector
   * one by one (a shared chat's own folder), else `undefined` (the caller asks sqlite-vec for more
   * neighbours, {@link knnSize}, and drops the ones outside the filter).
   */
  smallScope(filter: ScopePathFilter, most: number): number[] | undefined;
  /** How many neighbours to ask for so that `limit` of them can pass the filter. */
  knnSize(filter: ScopePathFilter, limit: number): number;
}

/** Prepares the path-filtered queries on an open index database. */
export function createSqliteScopeQueries(db: Database.Database): SqliteScopeQueries {
  // `(prefix matches) = wanted`: wanted 1 keeps the chunks under the prefix, 0 keeps every other one.
  const inScope = "(substr(c.path, 1, length(@prefix)) = @prefix) = @wanted";
  const ranked = db
    .prepare(
      `SELECT chunks_fts.rowid AS rowid, -bm25(chunks_fts) AS score FROM chunks_fts
     JOIN chunks c ON c.id = chunks_fts.rowid
     WHERE chunks_fts MATCH @expression AND ${inScope} ORDER BY rank LIMIT @limit`,
    )
    .raw();
  const recent = db
    .prepare(
      `SELECT chunks_fts.rowid AS rowid, 0 AS score FROM chunks_fts
     JOIN chunks c ON c.id = chunks_fts.rowid
     WHERE chunks_fts MATCH @expression AND ${inScope} ORDER BY chunks_fts.rowid DESC LIMIT @limit`,
    )
    .raw();
  const rowids = db.prepare(`SELECT c.id FROM chunks c WHERE ${inScope} LIMIT @limit`).pluck();
  const outside = db.prepare(`SELECT count(*) FROM chunks c WHERE NOT (${inScope})`).pluck();
  const parameters = (filter: ScopePathFilter) =>
    filter.prefix !== undefined
      ? { prefix: filter.prefix, wanted: 1 }
      : { prefix: filter.excludePrefix, wanted: 0 };

  return {
    text(expression, limit, rank, filter) {
      const statement = rank ? ranked : recent;
      return addScoreRows(statement.all({ expression, limit, ...parameters(filter) }), new Map());
    },
    smallScope(filter, most) {
      if (filter.prefix === undefined) return undefined;
      const found = rowids.all({ ...parameters(filter), limit: most + 1 }).map(Number);
      return found.length > most ? undefined : found;
    },
    knnSize(filter, limit) {
      const excluded = Number(outside.get(parameters(filter)));
      return Math.min(MAX_KNN, limit + excluded);
    },
  };
}
