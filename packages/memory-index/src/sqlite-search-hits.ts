import { matchesPathFilter } from "@almanac/memory-files";
import type { ChunkCache } from "./sqlite-chunk-cache.js";
import { dimensionsMismatch } from "./sqlite-dimensions.js";
import { allOf, anyOf, rawChunkRow } from "./sqlite-rows.js";
import type { SqliteScopeQueries } from "./sqlite-scope-filter.js";
import { addScoreRows } from "./sqlite-score-rows.js";
import type { prepareIndexStatements } from "./sqlite-statements.js";
import { type VectorStatements, vectorSimilarities } from "./sqlite-vector-search.js";
import type { BackendHit, BackendQuery, StoredChunk } from "./types.js";

/** What {@link collectSearchHits} reads: one connection's statements, caches and vector size. */
export interface SearchHitSources {
  /** The database file, named in `index.dimensions_mismatch`. */
  readonly path: string;
  readonly statements: ReturnType<typeof prepareIndexStatements>;
  readonly scoped: SqliteScopeQueries;
  readonly chunkCache: ChunkCache;
  /** The stored vector size, or undefined while the index has no vector table. */
  readonly dimensions: number | undefined;
  /** The vector statements (prepared on first use), or undefined while the index has no vector table. */
  readonly vectors: () => VectorStatements | undefined;
}

/**
 * The SQLite index's candidates for `query`: full-text scores and vector similarities, merged by chunk, each
 * chunk read from the cache or SQLite. The caller runs it inside one read transaction (a single snapshot).
 */
export function collectSearchHits(query: BackendQuery, sources: SearchHitSources): BackendHit[] {
  const { statements, scoped } = sources;
  let textScores = new Map<number, number>();
  if ((query.terms.length > 0 || (query.allOf?.length ?? 0) > 0) && query.paths !== undefined) {
    const expression = query.allOf === undefined ? anyOf(query.terms) : allOf(query.allOf);
    textScores = scoped.text(expression, query.limit, query.rank !== false, query.paths);
  } else if (query.terms.length > 0 || (query.allOf?.length ?? 0) > 0) {
    const statement = query.rank === false ? statements.recentTextSearch : statements.textSearch;
    const expression = query.allOf === undefined ? anyOf(query.terms) : allOf(query.allOf);
    addScoreRows(statement.all(expression, query.limit), textScores);
  }
  const vectorTable = sources.vectors();
  if (query.vector !== undefined && vectorTable !== undefined && query.vector.length !== sources.dimensions)
    throw dimensionsMismatch(sources.path, sources.dimensions!, query.vector.length);
  const similarities =
    query.vector === undefined || vectorTable === undefined
      ? new Map<number, number>()
      : vectorSimilarities(query.vector, query, { vectors: vectorTable, scoped, textScores });
  const ids = [...new Set([...textScores.keys(), ...similarities.keys()])];
  const chunks = fetchChunks(ids, sources);
  return ids.flatMap((id) => {
    const chunk = chunks.get(id);
    if (chunk === undefined) return [];
    if (query.paths !== undefined && !matchesPathFilter(query.paths, chunk.path)) return [];
    const textScore = textScores.get(id);
    const vectorSimilarity = similarities.get(id);
    return [
      {
        chunk,
        ...(textScore === undefined ? {} : { textScore }),
        ...(vectorSimilarity === undefined ? {} : { vectorSimilarity }),
      },
    ];
  });
}

/** The chunks at `ids` (absent ones left out), from the cache or, for the ones it lacks, in one read. */
function fetchChunks(ids: readonly number[], sources: SearchHitSources): Map<number, StoredChunk> {
  const { chunkCache, statements } = sources;
  const byId = new Map<number, StoredChunk>();
  const missing: number[] = [];
  for (const id of ids) {
    const chunk = chunkCache.get(id);
    if (chunk === undefined) missing.push(id);
    else byId.set(id, chunk);
  }
  if (missing.length === 0) return byId;
  for (const row of statements.chunksById.all(JSON.stringify(missing))) {
    const { rowid, chunk } = rawChunkRow(row);
    byId.set(rowid, chunkCache.set(rowid, chunk));
  }
  return byId;
}
