import type Database from "better-sqlite3";
import { scoreRowSchema, vectorRowSchema } from "./sqlite-rows.js";
import type { SqliteScopeQueries } from "./sqlite-scope-filter.js";
import type { BackendQuery } from "./types.js";
import { cosineSimilarity, fromVectorBlob, toVectorBlob } from "./vector-math.js";

/** The prepared statements over sqlite-vec's `chunks_vec` table. */
export interface VectorStatements {
  readonly insert: Database.Statement;
  readonly remove: Database.Statement;
  readonly knn: Database.Statement;
  readonly get: Database.Statement;
}

/** What {@link vectorSimilarities} reads: the vector table, the scope queries and the text half's hits. */
export interface VectorSearchContext {
  readonly vectors: VectorStatements;
  readonly scoped: SqliteScopeQueries;
  readonly textScores: ReadonlyMap<number, number>;
}

/** A shared chat's folder up to this many chunks is compared chunk by chunk instead of through the k-NN query. */
const SMALL_SCOPE_CHUNKS = 20_000;

/**
 * The vector half of a search (the caller has checked the vector's size): the cosine similarity to `vector` of
 * its nearest chunks within the query's paths, and of every chunk the text half found, so each candidate has
 * both scores.
 */
export function vectorSimilarities(
  vector: readonly number[],
  query: BackendQuery,
  context: VectorSearchContext,
): Map<number, number> {
  const { vectors, scoped, textScores } = context;
  const similarities = new Map<number, number>();
  const similarityOf = (rowid: number): number | undefined => {
    const row = vectors.get.get(BigInt(rowid));
    if (row === undefined) return undefined;
    return cosineSimilarity(vector, fromVectorBlob(vectorRowSchema.parse(row).embedding));
  };
  const small = query.paths === undefined ? undefined : scoped.smallScope(query.paths, SMALL_SCOPE_CHUNKS);
  if (small !== undefined) {
    // A shared chat's own folder: compare with each of its vectors, the nearest `limit` count.
    const nearest: Array<[number, number]> = [];
    for (const rowid of small) {
      const similarity = similarityOf(rowid);
      if (similarity !== undefined) nearest.push([rowid, similarity]);
    }
    nearest.sort((left, right) => right[1] - left[1]);
    for (const [rowid, similarity] of nearest.slice(0, query.limit)) similarities.set(rowid, similarity);
  } else {
    const k = query.paths === undefined ? query.limit : scoped.knnSize(query.paths, query.limit);
    for (const row of vectors.knn.all(toVectorBlob(vector), k)) {
      const parsed = scoreRowSchema.parse(row);
      similarities.set(parsed.rowid, 1 - parsed.score);
    }
  }
  for (const rowid of textScores.keys()) {
    if (similarities.has(rowid)) continue;
    const similarity = similarityOf(rowid);
    if (similarity !== undefined) similarities.set(rowid, similarity);
  }
  return similarities;
}
