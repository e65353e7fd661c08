import type Database from "better-sqlite3";
import { z } from "zod";
import { anyOf } from "./sqlite-rows.js";

/** Matches counted one by one before a term's frequency is extrapolated instead. */
const defaultExactLimit = 2000;
const newestSchema = z.object({ count: z.number(), oldest: z.number().nullable() });
const idRangeSchema = z.object({ low: z.number().nullable(), high: z.number().nullable() });

/** Document frequencies from the FTS5 index, cached until the next write. */
export interface TermFrequencies {
  /** Chunks holding `term`, out of `total` (exact up to 2000, estimated above). */
  count(term: string, total: number): number;
  /** Drops the cache (after any write). */
  forget(): void;
}

/**
 * Counting a term's matches costs time in proportion to them (fts5vocab as well), which a query
 * cannot afford on a large index. So a term is counted exactly up to 2000 matches; beyond that,
 * its frequency is extrapolated from how far back in chunk ids its 2000 newest matches reach
 * (FTS5 reads newest first cheaply). Estimates only weigh terms (IDF) and plan queries. An index of fewer
 * chunks than that has every term counted whole. `exactLimit` is for tests.
 */
export function createTermFrequencies(
  db: Database.Database,
  exactLimit = defaultExactLimit,
): TermFrequencies {
  // Counting matches in no order is about twice as fast as reading them newest first, and a write makes every
  // term of the next queries counted again.
  const allMatches = db.prepare("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?").pluck();
  const newestMatches = db.prepare(
    "SELECT count(*) AS count, min(rowid) AS oldest FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rowid DESC LIMIT ?)",
  );
  const idRangeStatement = db.prepare("SELECT min(id) AS low, max(id) AS high FROM chunks");
  const cache = new Map<string, number>();
  let idRange: z.infer<typeof idRangeSchema> | undefined;

  const countMatches = (term: string, total: number): number => {
    // No term of an index with fewer chunks than the limit can reach it: its matches are counted whole.
    if (total < exactLimit) return Number(allMatches.get(anyOf([term])));
    const newest = newestSchema.parse(newestMatches.get(anyOf([term]), exactLimit));
    if (newest.count < exactLimit || newest.oldest === null) return newest.count;
    idRange ??= idRangeSchema.parse(idRangeStatement.get());
    const high = idRange.high ?? newest.oldest;
    const span = Math.max(1, high - newest.oldest + 1);
    const ids = Math.max(span, high - (idRange.low ?? newest.oldest) + 1);
    // The matches found cover `span` of the `ids` id range (chunks spread evenly over it).
    return Math.min(total, Math.round((newest.count * ids) / span));
  };

  return {
    count(term, total) {
      const known = cache.get(term);
      if (known !== undefined) return known;
      const count = countMatches(term, total);
      if (cache.size > 10_000) cache.clear();
      cache.set(term, count);
      return count;
    },
    forget() {
      cache.clear();
      idRange = undefined;
    },
  };
}
