import { type Logger, silentLogger } from "@almanac/core";
import type Database from "better-sqlite3";
import { scoringLength } from "./hybrid-score.js";
import { createSelfRepairingIndex, type IndexRepair } from "./self-repairing-index.js";
import { type ChunkCache, createChunkCache } from "./sqlite-chunk-cache.js";
import { dimensionsMismatch, dropVectors, readDimensions, settleDimensions } from "./sqlite-dimensions.js";
import {
  cacheRowSchema,
  chunkRowSchema,
  countSchema,
  fileRowSchema,
  headingSeparator,
  toFile,
  toStoredChunk,
} from "./sqlite-rows.js";
import { createVectorTable, openSqliteDatabase, readMeta, writeMeta } from "./sqlite-schema.js";
import { createSqliteScopeQueries, type SqliteScopeQueries } from "./sqlite-scope-filter.js";
import { collectSearchHits } from "./sqlite-search-hits.js";
import { prepareIndexStatements, prepareVectorStatements } from "./sqlite-statements.js";
import { createTermFrequencies, type TermFrequencies } from "./sqlite-term-frequencies.js";
import type { VectorStatements } from "./sqlite-vector-search.js";
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
  return new SqliteIndex(options);
}

type IndexStatements = ReturnType<typeof prepareIndexStatements>;

/**
 * {@link MemoryIndexBackend} over one connection to the database file. Counts, chunk texts and the vector size
 * are cached in fields; each public call that may meet another process's commit checks `data_version` first.
 */
class SqliteIndex implements MemoryIndexBackend {
  readonly kind = "sqlite";
  readonly #path: string;
  /** The configured vector size: `clearVectors` creates the table again at this size. */
  readonly #configuredDimensions: number | undefined;
  readonly #maxCacheEntries: number;
  readonly #db: Database.Database;
  // The vector size, read again whenever it may have changed (here or, see `#noticeOtherWriters`, elsewhere):
  // reading `meta` on every search was a SQLite statement a query.
  #dimensions: number | undefined;
  readonly #scoped: SqliteScopeQueries;
  readonly #statements: IndexStatements;
  /** Prepared on first use once the vector table exists; dropped whenever the table may have been replaced. */
  #vectorStatements: VectorStatements | undefined;
  #chunkTotal: number | undefined;
  readonly #frequencies: TermFrequencies;
  readonly #chunkCache: ChunkCache;
  #cacheInsertsSincePrune = 0;
  // SQLite changes `data_version` when another connection (another process syncing the same file) commits.
  #dataVersion: unknown;
  readonly #upsertBatch: Database.Transaction<(files: readonly FileUpsert[]) => void>;
  readonly #removeFile: Database.Transaction<(filePath: string) => void>;
  readonly #applyVectors: Database.Transaction<(model: string, entries: readonly ChunkVector[]) => void>;
  readonly #searchSnapshot: Database.Transaction<(query: BackendQuery) => BackendHit[]>;

  /** Opens the file and settles the vector size; throws `index.dimensions_mismatch` (the file is closed then). */
  constructor(options: SqliteIndexOptions) {
    const logger = (options.logger ?? silentLogger).child({ component: "memory-index", backend: "sqlite" });
    this.#path = options.path;
    this.#configuredDimensions = options.dimensions;
    this.#maxCacheEntries = options.maxCacheEntries ?? 50_000;
    this.#db = openSqliteDatabase(options.path);
    this.#dimensions = settleDimensions(this.#db, options, logger);
    this.#scoped = createSqliteScopeQueries(this.#db);
    this.#statements = prepareIndexStatements(this.#db);
    this.#frequencies = createTermFrequencies(this.#db);
    this.#chunkCache = createChunkCache(options.chunkCacheCharacters ?? 2 * 1024 * 1024);
    this.#dataVersion = this.#statements.dataVersion.get();

    // One transaction for a whole batch: each commit makes FTS5 flush a new index segment, which costs more
    // than the inserts (2,000 chunks: ~490 ms at 5 chunks a transaction, ~220 ms in one).
    this.#upsertBatch = this.#db.transaction((files: readonly FileUpsert[]) => {
      for (const { file, chunks, embeddings } of files) this.#replaceFile(file, chunks, embeddings);
      this.#forgetCounts();
      this.#pruneCache();
    });
    this.#removeFile = this.#db.transaction((filePath: string) => {
      this.#removeChunksOfPath(filePath);
      this.#statements.deleteFile.run(filePath);
      this.#forgetCounts();
    });
    this.#applyVectors = this.#db.transaction((model: string, entries: readonly ChunkVector[]) => {
      for (const entry of entries) {
        const rowid = this.#statements.chunkForVector.get(entry.chunkId, entry.hash);
        if (typeof rowid === "number") this.#storeVector(rowid, model, entry.hash, entry.vector);
      }
      if (entries.length > 0) writeMeta(this.#db, "vector_model", model);
      this.#pruneCache();
    });
    // One read transaction: the check for other writers, the full-text query and the chunk reads see one
    // snapshot, so a rowid another process deleted and reused in between cannot be answered from the cache.
    this.#searchSnapshot = this.#db.transaction((query: BackendQuery): BackendHit[] => {
      this.#noticeOtherWriters();
      return collectSearchHits(query, {
        path: this.#path,
        statements: this.#statements,
        scoped: this.#scoped,
        chunkCache: this.#chunkCache,
        dimensions: this.#dimensions,
        vectors: () => this.#vectors(),
      });
    });
  }

  upsertFile(file: IndexedFile, chunks: readonly IndexChunk[], embeddings?: ChunkEmbeddings): Promise<void> {
    return this.upsertFiles([{ file, chunks, ...(embeddings === undefined ? {} : { embeddings }) }]);
  }

  async upsertFiles(files: readonly FileUpsert[]): Promise<void> {
    this.#noticeOtherWriters();
    const sizes = new Set(
      files.flatMap(({ embeddings }) =>
        (embeddings?.vectors ?? []).flatMap((vector) => (vector === undefined ? [] : [vector.length])),
      ),
    );
    for (const size of sizes) this.#ensureDimensions(size);
    this.#upsertBatch(files);
  }

  async deleteFile(filePath: string): Promise<void> {
    this.#noticeOtherWriters();
    this.#removeFile(filePath);
  }

  async fileState(filePath: string): Promise<IndexedFile | undefined> {
    const row = this.#statements.fileState.get(filePath);
    return row === undefined ? undefined : toFile(fileRowSchema.parse(row));
  }

  async listFiles(): Promise<readonly IndexedFile[]> {
    return this.#statements.listFiles.all().map((row) => toFile(fileRowSchema.parse(row)));
  }

  async search(query: BackendQuery): Promise<BackendHit[]> {
    return this.#searchSnapshot(query);
  }

  async termStatistics(terms: readonly string[]): Promise<TermStatistics> {
    this.#noticeOtherWriters();
    this.#chunkTotal ??= this.#countRows("chunks");
    const total = this.#chunkTotal;
    return { total, documents: new Map(terms.map((term) => [term, this.#frequencies.count(term, total)])) };
  }

  async pendingChunks(limit: number): Promise<readonly StoredChunk[]> {
    return this.#statements.pending.all(limit).map((row) => toStoredChunk(chunkRowSchema.parse(row)));
  }

  async setVectors(model: string, entries: readonly ChunkVector[]): Promise<void> {
    this.#noticeOtherWriters();
    const sizes = new Set(entries.map((entry) => entry.vector.length));
    for (const size of sizes) this.#ensureDimensions(size);
    this.#applyVectors(model, entries);
  }

  async cachedVectors(
    model: string,
    hashes: readonly string[],
  ): Promise<ReadonlyMap<string, readonly number[]>> {
    const found = new Map<string, readonly number[]>();
    if (hashes.length === 0) return found;
    for (const row of this.#statements.cacheLookup.all(model, JSON.stringify(hashes))) {
      const parsed = cacheRowSchema.parse(row);
      found.set(parsed.hash, Array.from(fromVectorBlob(parsed.vector)));
    }
    return found;
  }

  async clearVectors(): Promise<void> {
    dropVectors(this.#db);
    this.#vectorStatements = undefined;
    if (this.#configuredDimensions !== undefined) createVectorTable(this.#db, this.#configuredDimensions);
    this.#dimensions = readDimensions(this.#db);
  }

  async clear(): Promise<void> {
    this.#db.transaction(() => {
      this.#db.exec(
        "DELETE FROM files; DELETE FROM chunks; INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all');",
      );
      if (this.#vectors() !== undefined) this.#db.exec("DELETE FROM chunks_vec");
    })();
    this.#forgetCounts();
    this.#chunkCache.clear();
  }

  async stats(): Promise<BackendStats> {
    this.#noticeOtherWriters();
    const embedded = countSchema.parse(
      this.#db.prepare("SELECT count(*) AS count FROM chunks WHERE embedded = 1").get(),
    );
    return {
      files: this.#countRows("files"),
      chunks: this.#countRows("chunks"),
      embeddedChunks: embedded.count,
      dimensions: this.#dimensions,
      vectorModel: readMeta(this.#db, "vector_model"),
    };
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  /** The vector statements, or undefined while the index has no vector table. */
  #vectors(): VectorStatements | undefined {
    if (this.#dimensions === undefined) return undefined;
    this.#vectorStatements ??= prepareVectorStatements(this.#db);
    return this.#vectorStatements;
  }

  #countRows(table: string): number {
    return countSchema.parse(this.#statements.count(table).get()).count;
  }

  /** Drops the cached counts (after any write). */
  #forgetCounts(): void {
    this.#chunkTotal = undefined;
    this.#frequencies.forget();
  }

  /** Drops the caches when another connection wrote the file since the last look (ours clear them themselves). */
  #noticeOtherWriters(): void {
    const version = this.#statements.dataVersion.get();
    if (version === this.#dataVersion) return;
    this.#dataVersion = version;
    this.#forgetCounts();
    this.#chunkCache.clear();
    this.#dimensions = readDimensions(this.#db);
    this.#vectorStatements = undefined;
  }

  /** Checks (and on first use fixes) the vector size, before anything is written. */
  #ensureDimensions(size: number): void {
    const stored = this.#dimensions;
    if (stored === undefined) {
      createVectorTable(this.#db, size);
      this.#dimensions = readDimensions(this.#db);
      this.#vectorStatements = undefined;
    } else if (stored !== size) {
      throw dimensionsMismatch(this.#path, stored, size);
    }
  }

  #storeVector(rowid: number, model: string, hash: string, vector: readonly number[]): void {
    const blob = toVectorBlob(vector);
    const statementsForVectors = this.#vectors()!;
    statementsForVectors.remove.run(BigInt(rowid));
    statementsForVectors.insert.run(BigInt(rowid), blob);
    this.#statements.markEmbedded.run(rowid);
    if (this.#statements.cacheInsert.run(model, hash, vector.length, blob, Date.now()).changes > 0)
      this.#cacheInsertsSincePrune += 1;
  }

  #removeChunksOfPath(filePath: string): void {
    const vectorTable = this.#vectors();
    for (const id of this.#statements.chunkIdsOfPath.all(filePath)) {
      if (typeof id !== "number") continue;
      // Before the row goes: a later insert may take its rowid. (A rollback only makes the cache miss.)
      this.#chunkCache.delete(id);
      this.#statements.deleteFts.run(id);
      vectorTable?.remove.run(BigInt(id));
    }
    this.#statements.deleteChunksOfPath.run(filePath);
  }

  #pruneCache(): void {
    if (this.#cacheInsertsSincePrune < 500) return;
    this.#cacheInsertsSincePrune = 0;
    const excess = this.#countRows("embedding_cache") - this.#maxCacheEntries;
    if (excess <= 0) return;
    this.#db
      .prepare(
        `DELETE FROM embedding_cache WHERE (model, hash) IN (
         SELECT model, hash FROM embedding_cache WHERE hash NOT IN (SELECT hash FROM chunks)
         ORDER BY created_at LIMIT ?)`,
      )
      .run(excess);
  }

  /** Replaces one file's chunks; runs inside `#upsertBatch`'s transaction. */
  #replaceFile(file: IndexedFile, chunks: readonly IndexChunk[], embeddings?: ChunkEmbeddings): void {
    this.#removeChunksOfPath(file.path);
    this.#statements.upsertFile.run(file);
    chunks.forEach((chunk, index) => {
      const vector = embeddings?.vectors[index];
      const { lastInsertRowid } = this.#statements.insertChunk.run(
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
      this.#statements.insertFts.run(rowid, chunk.termText ?? chunk.terms.join(" "));
      if (vector !== undefined && embeddings !== undefined)
        this.#storeVector(rowid, embeddings.model, chunk.hash, vector);
    });
    if (embeddings?.vectors.some((vector) => vector !== undefined))
      writeMeta(this.#db, "vector_model", embeddings.model);
  }
}
