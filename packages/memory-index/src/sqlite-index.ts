import { type Logger, silentLogger, UserError } from "@almanac/core";
import { matchesPathFilter } from "@almanac/memory-files";
import type Database from "better-sqlite3";
import { scoringLength } from "./hybrid-score.js";
import { createSelfRepairingIndex, type IndexRepair } from "./self-repairing-index.js";
import { createChunkCache } from "./sqlite-chunk-cache.js";
import {
  allOf,
  anyOf,
  cacheRowSchema,
  chunkRowSchema,
  countSchema,
  fileRowSchema,
  headingSeparator,
  rawChunkRow,
  toFile,
  toStoredChunk,
} from "./sqlite-rows.js";
import { createVectorTable, openSqliteDatabase, readMeta, writeMeta } from "./sqlite-schema.js";
import { createSqliteScopeQueries } from "./sqlite-scope-filter.js";
import { addScoreRows } from "./sqlite-score-rows.js";
import { prepareIndexStatements, prepareVectorStatements } from "./sqlite-statements.js";
import { createTermFrequencies } from "./sqlite-term-frequencies.js";
import { type VectorStatements, vectorSimilarities } from "./sqlite-vector-search.js";
import type {
  BackendHit,
  BackendQuery,
  BackendStats,
  ChunkEmbeddings,
  ChunkVector,
  FileUpsert,
  IndexChunk,
  IndexedFile,
  MemoryIndexBackend,
  StoredChunk,
  TermStatistics,
} from "./types.js";
import { fromVectorBlob, toVectorBlob } from "./vector-math.js";

/** Options of {@link createSqliteIndex}. */
export interface SqliteIndexOptions {
  /** Database file (created with its directory), or `:memory:`. */
  readonly path: string;
  /** Vector size. When absent it is learnt from the first vectors stored. */
  readonly dimensions?: number;
  /**
   * What to do when `dimensions` differs from the vectors already stored: `false` (default) fails
   * with `index.dimensions_mismatch`; `true` drops the vectors (chunks stay searchable as text and
   * are re-embedded by the indexer's catch-up).
   */
  readonly rebuildOnDimensionsMismatch?: boolean;
  /** Most embedding-cache entries kept; the oldest unreferenced ones go first (default 50 000). */
  readonly maxCacheEntries?: number;
  /**
   * Characters of chunk text kept in memory for later searches after a search read them (default 2 Mi, about a
   * year of daily logs; scoring keeps a normalised copy of each beside it). 0 reads every candidate from SQLite.
   */
  readonly chunkCacheCharacters?: number;
  /**
   * Told when a corrupt or foreign file was moved aside (at open or when a query met the damage) and a
   * fresh, empty index took its place: rebuild it from the Markdown.
   */
  readonly onRepair?: (repair: IndexRepair) => void;
  readonly logger?: Logger;
}

function mismatch(file: string, stored: number, wanted: number): UserError {
  return new UserError(
    "index.dimensions_mismatch",
    `The memory index "${file}" holds ${stored}-dimensional vectors but ${wanted} were given (was the embedding model changed?). ` +
      `Set the embedding dimensions back to ${stored}, enable rebuildOnDimensionsMismatch, or delete "${file}": it is rebuilt from the Markdown files.`,
  );
}

/**
 * The embedded default backend: one SQLite file with FTS5 (BM25) for text, sqlite-vec for vectors,
 * a files table for incremental sync and an embedding cache keyed by (model, content hash).
 * WAL mode; every mutation runs in a transaction. The file can be deleted at any time: the indexer
 * rebuilds it from the Markdown. A corrupt or foreign file is moved aside and replaced by an empty index
 * (see `onRepair`). Throws `index.dimensions_mismatch` (see {@link SqliteIndexOptions}).
 */
export function createSqliteIndex(options: SqliteIndexOptions): MemoryIndexBackend {
  return createSelfRepairingIndex({
    file: options.path,
    open: () => openSqliteIndex(options),
    ...(options.onRepair === undefined ? {} : { onRepair: options.onRepair }),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
}

/** The backend over the database file as it is (see {@link createSqliteIndex}). */
function openSqliteIndex(options: SqliteIndexOptions): MemoryIndexBackend {
  const logger = (options.logger ?? silentLogger).child({ component: "memory-index", backend: "sqlite" });
  const maxCacheEntries = options.maxCacheEntries ?? 50_000;
  const db = openSqliteDatabase(options.path);
  const readDimensions = (): number | undefined => {
    const value = readMeta(db, "dimensions");
    return value === undefined ? undefined : Number(value);
  };
  // The vector size, read again whenever it may have changed (here or, see `noticeOtherWriters`, elsewhere):
  // reading `meta` on every search was a SQLite statement a query.
  let dimensions = readDimensions();
  const storedDimensions = (): number | undefined => dimensions;
  const existing = storedDimensions();
  if (existing !== undefined && options.dimensions !== undefined && existing !== options.dimensions) {
    if (options.rebuildOnDimensionsMismatch !== true) {
      db.close();
      throw mismatch(options.path, existing, options.dimensions);
    }
    logger.warn(
      { stored: existing, configured: options.dimensions },
      "vector size changed; dropping stored vectors",
    );
    dropVectors(db);
    dimensions = readDimensions();
  }
  if (storedDimensions() === undefined && options.dimensions !== undefined) {
    createVectorTable(db, options.dimensions);
    dimensions = readDimensions();
  }

  const scoped = createSqliteScopeQueries(db);
  const statements = prepareIndexStatements(db);
  let vectorStatements: VectorStatements | undefined;
  const vectors = () => {
    if (storedDimensions() === undefined) return undefined;
    vectorStatements ??= prepareVectorStatements(db);
    return vectorStatements;
  };
  let chunkTotal: number | undefined;
  const frequencies = createTermFrequencies(db);
  const chunkCache = createChunkCache(options.chunkCacheCharacters ?? 2 * 1024 * 1024);
  let cacheInsertsSincePrune = 0;

  const countRows = (table: string): number => countSchema.parse(statements.count(table).get()).count;

  /** Drops the cached counts (after any write). */
  const forgetCounts = (): void => {
    chunkTotal = undefined;
    frequencies.forget();
  };

  // SQLite changes `data_version` when another connection (another process syncing the same file) commits.
  let dataVersion = statements.dataVersion.get();
  /** Drops the caches when another connection wrote the file since the last look (ours clear them themselves). */
  const noticeOtherWriters = (): void => {
    const version = statements.dataVersion.get();
    if (version === dataVersion) return;
    dataVersion = version;
    forgetCounts();
    chunkCache.clear();
    dimensions = readDimensions();
    vectorStatements = undefined;
  };

  /** Checks (and on first use fixes) the vector size, before anything is written. */
  const ensureDimensions = (size: number): void => {
    const stored = storedDimensions();
    if (stored === undefined) {
      createVectorTable(db, size);
      dimensions = readDimensions();
      vectorStatements = undefined;
    } else if (stored !== size) {
      throw mismatch(options.path, stored, size);
    }
  };

  const storeVector = (rowid: number, model: string, hash: string, vector: readonly number[]): void => {
    const blob = toVectorBlob(vector);
    const statementsForVectors = vectors()!;
    statementsForVectors.remove.run(BigInt(rowid));
    statementsForVectors.insert.run(BigInt(rowid), blob);
    statements.markEmbedded.run(rowid);
    if (statements.cacheInsert.run(model, hash, vector.length, blob, Date.now()).changes > 0)
      cacheInsertsSincePrune += 1;
  };

  const removeChunksOfPath = (filePath: string): void => {
    const vectorTable = vectors();
    for (const id of statements.chunkIdsOfPath.all(filePath)) {
      if (typeof id !== "number") continue;
      // Before the row goes: a later insert may take its rowid. (A rollback only makes the cache miss.)
      chunkCache.delete(id);
      statements.deleteFts.run(id);
      vectorTable?.remove.run(BigInt(id));
    }
    statements.deleteChunksOfPath.run(filePath);
  };

  const pruneCache = (): void => {
    if (cacheInsertsSincePrune < 500) return;
    cacheInsertsSincePrune = 0;
    const excess = countRows("embedding_cache") - maxCacheEntries;
    if (excess <= 0) return;
    db.prepare(
      `DELETE FROM embedding_cache WHERE (model, hash) IN (
         SELECT model, hash FROM embedding_cache WHERE hash NOT IN (SELECT hash FROM chunks)
         ORDER BY created_at LIMIT ?)`,
    ).run(excess);
  };

  /** Replaces one file's chunks; runs inside {@link upsertBatch}'s transaction. */
  const replaceFile = (file: IndexedFile, chunks: readonly IndexChunk[], embeddings?: ChunkEmbeddings) => {
    removeChunksOfPath(file.path);
    statements.upsertFile.run(file);
    chunks.forEach((chunk, index) => {
      const vector = embeddings?.vectors[index];
      const { lastInsertRowid } = statements.insertChunk.run(
        chunk.id,
        chunk.path,
        chunk.startLine,
        chunk.endLine,
        chunk.headings.join(headingSeparator),
        chunk.text,
        chunk.hash,
        file.source,
        file.mtimeMs,
        0,
        chunk.textLength ?? scoringLength(chunk),
      );
      const rowid = Number(lastInsertRowid);
      statements.insertFts.run(rowid, chunk.termText ?? chunk.terms.join(" "));
      if (vector !== undefined && embeddings !== undefined)
        storeVector(rowid, embeddings.model, chunk.hash, vector);
    });
    if (embeddings?.vectors.some((vector) => vector !== undefined))
      writeMeta(db, "vector_model", embeddings.model);
  };

  // One transaction for a whole batch: each commit makes FTS5 flush a new index segment, which costs more
  // than the inserts (2,000 chunks: ~490 ms at 5 chunks a transaction, ~220 ms in one).
  const upsertBatch = db.transaction((files: readonly FileUpsert[]) => {
    for (const { file, chunks, embeddings } of files) replaceFile(file, chunks, embeddings);
    forgetCounts();
    pruneCache();
  });

  const removeFile = db.transaction((filePath: string) => {
    removeChunksOfPath(filePath);
    statements.deleteFile.run(filePath);
    forgetCounts();
  });

  const applyVectors = db.transaction((model: string, entries: readonly ChunkVector[]) => {
    for (const entry of entries) {
      const rowid = statements.chunkForVector.get(entry.chunkId, entry.hash);
      if (typeof rowid === "number") storeVector(rowid, model, entry.hash, entry.vector);
    }
    if (entries.length > 0) writeMeta(db, "vector_model", model);
    pruneCache();
  });

  /** The chunks at `ids` (absent ones left out), from the cache or, for the ones it lacks, in one read. */
  const fetchChunks = (ids: readonly number[]): Map<number, StoredChunk> => {
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
  };

  // One read transaction: the check for other writers, the full-text query and the chunk reads see one snapshot,
  // so a rowid another process deleted and reused in between cannot be answered from the cache.
  const searchSnapshot = db.transaction((query: BackendQuery): BackendHit[] => {
    noticeOtherWriters();
    let textScores = new Map<number, number>();
    if ((query.terms.length > 0 || (query.allOf?.length ?? 0) > 0) && query.paths !== undefined) {
      const expression = query.allOf === undefined ? anyOf(query.terms) : allOf(query.allOf);
      textScores = scoped.text(expression, query.limit, query.rank !== false, query.paths);
    } else if (query.terms.length > 0 || (query.allOf?.length ?? 0) > 0) {
      const statement = query.rank === false ? statements.recentTextSearch : statements.textSearch;
      const expression = query.allOf === undefined ? anyOf(query.terms) : allOf(query.allOf);
      addScoreRows(statement.all(expression, query.limit), textScores);
    }
    const vectorTable = vectors();
    if (query.vector !== undefined && vectorTable !== undefined && query.vector.length !== storedDimensions())
      throw mismatch(options.path, storedDimensions()!, query.vector.length);
    const similarities =
      query.vector === undefined || vectorTable === undefined
        ? new Map<number, number>()
        : vectorSimilarities(query.vector, query, { vectors: vectorTable, scoped, textScores });
    const ids = [...new Set([...textScores.keys(), ...similarities.keys()])];
    const chunks = fetchChunks(ids);
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
  });

  const upsertFiles = async (files: readonly FileUpsert[]): Promise<void> => {
    noticeOtherWriters();
    const sizes = new Set(
      files.flatMap(({ embeddings }) =>
        (embeddings?.vectors ?? []).flatMap((vector) => (vector === undefined ? [] : [vector.length])),
      ),
    );
    for (const size of sizes) ensureDimensions(size);
    upsertBatch(files);
  };

  return {
    kind: "sqlite",

    upsertFile: (file, chunks, embeddings) =>
      upsertFiles([{ file, chunks, ...(embeddings === undefined ? {} : { embeddings }) }]),

    upsertFiles,

    async deleteFile(filePath) {
      noticeOtherWriters();
      removeFile(filePath);
    },

    async fileState(filePath) {
      const row = statements.fileState.get(filePath);
      return row === undefined ? undefined : toFile(fileRowSchema.parse(row));
    },

    async listFiles() {
      return statements.listFiles.all().map((row) => toFile(fileRowSchema.parse(row)));
    },

    async search(query: BackendQuery): Promise<BackendHit[]> {
      return searchSnapshot(query);
    },

    async termStatistics(terms: readonly string[]): Promise<TermStatistics> {
      noticeOtherWriters();
      chunkTotal ??= countRows("chunks");
      const total = chunkTotal;
      return { total, documents: new Map(terms.map((term) => [term, frequencies.count(term, total)])) };
    },

    async pendingChunks(limit) {
      return statements.pending.all(limit).map((row) => toStoredChunk(chunkRowSchema.parse(row)));
    },

    async setVectors(model, entries) {
      noticeOtherWriters();
      const sizes = new Set(entries.map((entry) => entry.vector.length));
      for (const size of sizes) ensureDimensions(size);
      applyVectors(model, entries);
    },

    async cachedVectors(model, hashes) {
      const found = new Map<string, readonly number[]>();
      if (hashes.length === 0) return found;
      for (const row of statements.cacheLookup.all(model, JSON.stringify(hashes))) {
        const parsed = cacheRowSchema.parse(row);
        found.set(parsed.hash, Array.from(fromVectorBlob(parsed.vector)));
      }
      return found;
    },

    async clearVectors() {
      dropVectors(db);
      vectorStatements = undefined;
      if (options.dimensions !== undefined) createVectorTable(db, options.dimensions);
      dimensions = readDimensions();
    },

    async clear() {
      db.transaction(() => {
        db.exec(
          "DELETE FROM files; DELETE FROM chunks; INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all');",
        );
        if (vectors() !== undefined) db.exec("DELETE FROM chunks_vec");
      })();
      forgetCounts();
      chunkCache.clear();
    },

    async stats(): Promise<BackendStats> {
      noticeOtherWriters();
      const embedded = countSchema.parse(
        db.prepare("SELECT count(*) AS count FROM chunks WHERE embedded = 1").get(),
      );
      return {
        files: countRows("files"),
        chunks: countRows("chunks"),
        embeddedChunks: embedded.count,
        dimensions: storedDimensions(),
        vectorModel: readMeta(db, "vector_model"),
      };
    },

    async close() {
      if (db.open) db.close();
    },
  };
}

/** Drops the vector table and marks every chunk pending (chunks stay searchable as text). */
function dropVectors(db: Database.Database): void {
  db.transaction(() => {
    db.exec("DROP TABLE IF EXISTS chunks_vec; UPDATE chunks SET embedded = 0;");
    db.prepare("DELETE FROM meta WHERE key IN ('dimensions', 'vector_model')").run();
  })();
}
