import * as path from "node:path";
import { describeError, type Embedder, type Logger, silentLogger } from "@almanac/core";
import { listMemoryFiles } from "@almanac/memory-files";
import type { ChunkMarkdownOptions } from "./chunk-markdown.js";
import { type ChunkPreparer, createChunkPreparer } from "./chunk-preparer.js";
import { catchUpEmbeddings } from "./embedding-catch-up.js";
import {
  createEmbeddingGate,
  type EmbeddingGate,
  type EmbeddingGateStatus,
  isEmbeddingGate,
} from "./embedding-gate.js";
import { createFileIndexing, type FileIndexing } from "./index-files.js";
import { type MemoryWatcher, watchMemoryFiles } from "./memory-watcher.js";
import type { MemoryIndexBackend } from "./types.js";

/** Options of {@link createMemoryIndexer}. */
export interface MemoryIndexerOptions {
  /** The workspace holding `MEMORY.md` and `memory/`. */
  readonly workspace: string;
  readonly backend: MemoryIndexBackend;
  /** The embedding provider, or a gate shared with the search; absent means full-text only. */
  readonly embedder?: Embedder | EmbeddingGate;
  /** Chunk size and overlap (defaults 400 and 80 tokens). */
  readonly chunking?: ChunkMarkdownOptions;
  /** Quiet time after a file event before it is indexed (default 150 ms). */
  readonly debounceMs?: number;
  /** Chunks per embedding request of the catch-up (default 64). */
  readonly embedBatchSize?: number;
  /** How often the watcher retries pending embeddings and failed updates (default 60 000 ms). */
  readonly retryIntervalMs?: number;
  /** How often a long sync logs its progress (default 5000 ms). */
  readonly progressIntervalMs?: number;
  readonly logger?: Logger;
  /** Current time in ms (default `Date.now`). */
  readonly clock?: () => number;
}

/** What a sync did. */
export interface SyncReport {
  readonly filesScanned: number;
  readonly filesIndexed: number;
  readonly filesUnchanged: number;
  readonly filesRemoved: number;
  readonly chunksIndexed: number;
  /** Chunks whose vector came from the embedding cache. */
  readonly chunksFromCache: number;
  /** Chunks sent to the embedding provider. */
  readonly chunksEmbedded: number;
  readonly durationMs: number;
}

/** Progress of a sync or reindex, for large workspaces. */
export interface SyncProgress {
  readonly phase: "index" | "embed";
  readonly done: number;
  readonly total: number;
}

/** Options of {@link MemoryIndexer.sync} and {@link MemoryIndexer.reindex}. */
export interface SyncOptions {
  readonly onProgress?: (progress: SyncProgress) => void;
}

/** What the indexer reports (admin API, `/status`). */
export interface MemoryIndexStatus {
  readonly backend: string;
  readonly files: number;
  readonly chunks: number;
  readonly embeddedChunks: number;
  readonly pendingChunks: number;
  readonly dimensions: number | undefined;
  readonly lastSync: { readonly at: number; readonly report: SyncReport } | undefined;
  readonly watching: boolean;
  readonly embedding: EmbeddingGateStatus;
}

/** Keeps the index in step with the Markdown memory files. */
export interface MemoryIndexer {
  /** Incremental sync of every memory file (by size, mtime and hash), then embeds what is pending. */
  sync(options?: SyncOptions): Promise<SyncReport>;
  /** Starts watching `MEMORY.md` and `memory/`; changes are indexed within the debounce time. */
  watch(): Promise<void>;
  status(): Promise<MemoryIndexStatus>;
  /** Drops the index and rebuilds it from the Markdown (the embedding cache is kept). */
  reindex(options?: SyncOptions): Promise<SyncReport>;
  /** Resolves once queued work and debounced events are done (tests, benchmarks, shutdown). */
  whenIdle(): Promise<void>;
  /** Stops watching and waits for queued work; does not close the backend. */
  close(): Promise<void>;
  readonly embeddings: EmbeddingGate;
}

/** Creates the indexer; nothing happens until `sync()` or `watch()`. */
export function createMemoryIndexer(options: MemoryIndexerOptions): MemoryIndexer {
  return new WorkspaceIndexer(options);
}

/**
 * The {@link MemoryIndexer} {@link createMemoryIndexer} makes, over one workspace and backend. Every sync, watcher
 * batch and embedding catch-up runs through one queue, one task at a time, so they never write the index at once.
 */
class WorkspaceIndexer implements MemoryIndexer {
  readonly embeddings: EmbeddingGate;
  readonly #backend: MemoryIndexBackend;
  readonly #workspace: string;
  readonly #logger: Logger;
  readonly #debounceMs: number | undefined;
  readonly #clock: () => number;
  readonly #batchSize: number;
  readonly #retryIntervalMs: number;
  readonly #progressIntervalMs: number;
  readonly #preparer: ChunkPreparer;
  readonly #files: FileIndexing;
  #tail: Promise<unknown> = Promise.resolve();
  #queued = 0;
  #watcher: MemoryWatcher | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #lastSync: MemoryIndexStatus["lastSync"];
  #catchUpScheduled = false;
  #needsFullSync = false;
  #blockedReason: string | undefined;
  #closed = false;

  constructor(options: MemoryIndexerOptions) {
    const { backend } = options;
    this.#backend = backend;
    this.#workspace = path.resolve(options.workspace);
    const logger = (options.logger ?? silentLogger).child({
      component: "memory-indexer",
      backend: backend.kind,
    });
    this.#logger = logger;
    this.embeddings =
      options.embedder === undefined
        ? createEmbeddingGate({ logger })
        : isEmbeddingGate(options.embedder)
          ? options.embedder
          : createEmbeddingGate({ embedder: options.embedder, logger });
    this.#debounceMs = options.debounceMs;
    this.#clock = options.clock ?? Date.now;
    this.#batchSize = options.embedBatchSize ?? 64;
    this.#retryIntervalMs = options.retryIntervalMs ?? 60_000;
    this.#progressIntervalMs = options.progressIntervalMs ?? 5000;
    this.#preparer = createChunkPreparer({
      logger,
      ...(options.chunking === undefined ? {} : { chunking: options.chunking }),
    });
    this.#files = createFileIndexing({
      backend,
      workspace: this.#workspace,
      preparer: this.#preparer,
      embeddings: this.embeddings,
      logger,
    });
  }

  sync(syncOptions: SyncOptions = {}): Promise<SyncReport> {
    return this.#enqueue(() => this.#syncAll(syncOptions, true));
  }

  async watch(): Promise<void> {
    if (this.#watcher !== undefined || this.#closed) return;
    this.#watcher = await watchMemoryFiles({
      workspace: this.#workspace,
      logger: this.#logger,
      onChange: (paths) => this.#onFilesChanged(paths),
      ...(this.#debounceMs === undefined ? {} : { debounceMs: this.#debounceMs }),
    });
    this.#unsubscribe = this.embeddings.onModeChange((mode) => {
      if (mode === "hybrid") this.#scheduleCatchUp();
    });
    this.#retryTimer = setInterval(() => {
      if (this.#needsFullSync) this.#onFilesChanged("all");
      else this.#scheduleCatchUp();
    }, this.#retryIntervalMs);
    this.#retryTimer.unref();
  }

  async status(): Promise<MemoryIndexStatus> {
    const stats = await this.#backend.stats();
    return {
      backend: this.#backend.kind,
      files: stats.files,
      chunks: stats.chunks,
      embeddedChunks: stats.embeddedChunks,
      pendingChunks: stats.chunks - stats.embeddedChunks,
      dimensions: stats.dimensions,
      lastSync: this.#lastSync,
      watching: this.#watcher !== undefined,
      embedding: this.embeddings.status(),
    };
  }

  reindex(syncOptions: SyncOptions = {}): Promise<SyncReport> {
    return this.#enqueue(async () => {
      this.#logger.info({}, "memory reindex started");
      await this.#backend.clear();
      this.#blockedReason = undefined;
      return this.#syncAll(syncOptions, true);
    });
  }

  async whenIdle(): Promise<void> {
    for (;;) {
      await this.#tail;
      await new Promise((resolve) => setImmediate(resolve));
      if (this.#queued === 0 && this.#watcher?.pending() !== true && !this.#catchUpScheduled) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retryTimer !== undefined) clearInterval(this.#retryTimer);
    this.#unsubscribe?.();
    await this.#watcher?.close();
    this.#watcher = undefined;
    await this.#tail;
    await this.#preparer.close();
  }

  /** Runs `task` after every task queued before it, whether those failed or not. */
  #enqueue<T>(task: () => Promise<T>): Promise<T> {
    this.#queued += 1;
    const run = this.#tail.then(task, task).finally(() => {
      this.#queued -= 1;
    });
    this.#tail = run.catch(() => undefined);
    return run;
  }

  /** One catch-up pass; logs a vector-size problem once instead of on every pass. */
  async #catchUp(maxChunks: number): Promise<{ fromCache: number; embedded: number; morePending: boolean }> {
    if (!this.embeddings.configured || this.#blockedReason !== undefined)
      return { fromCache: 0, embedded: 0, morePending: false };
    const report = await catchUpEmbeddings(this.#backend, this.embeddings, {
      batchSize: this.#batchSize,
      maxChunks,
    });
    if (report.blocked !== undefined) {
      this.#blockedReason = report.blocked;
      this.#logger.error(
        { error: report.blocked },
        "vectors do not fit the index: memory search stays full-text until reindex",
      );
    }
    return report;
  }

  async #dropStaleVectors(): Promise<void> {
    if (!this.embeddings.configured) return;
    const { vectorModel } = await this.#backend.stats();
    if (vectorModel !== undefined && vectorModel !== this.embeddings.modelName) {
      this.#logger.warn(
        { from: vectorModel, to: this.embeddings.modelName },
        "embedding model changed: re-embedding every chunk",
      );
      await this.#backend.clearVectors();
    }
  }

  async #syncAll(syncOptions: SyncOptions, fullCatchUp: boolean): Promise<SyncReport> {
    const backend = this.#backend;
    const logger = this.#logger;
    const clock = this.#clock;
    const started = clock();
    await this.#dropStaleVectors();
    const files = await listMemoryFiles(this.#workspace);
    const onDisk = new Set(files);
    let filesRemoved = 0;
    for (const known of await backend.listFiles()) {
      if (onDisk.has(known.path)) continue;
      await backend.deleteFile(known.path);
      filesRemoved += 1;
    }
    if (files.length > 200) logger.info({ files: files.length }, "memory sync started");
    // Known from the start: the status shows 0 of N while the first files are read, not nothing.
    syncOptions.onProgress?.({ phase: "index", done: 0, total: files.length });
    let filesIndexed = 0;
    let chunksIndexed = 0;
    let chunksFromCache = 0;
    let lastLog = clock();
    let done = 0;
    const inWorkerBefore = this.#preparer.stats().preparedInWorker;
    await this.#files.indexPaths(files, true, true, (_relative, result) => {
      if (result?.outcome === "indexed") filesIndexed += 1;
      if (result?.outcome === "removed") filesRemoved += 1;
      chunksIndexed += result?.chunks ?? 0;
      chunksFromCache += result?.fromCache ?? 0;
      done += 1;
      syncOptions.onProgress?.({ phase: "index", done, total: files.length });
      if (clock() - lastLog >= this.#progressIntervalMs) {
        lastLog = clock();
        logger.info({ done, total: files.length, chunksIndexed }, "memory sync progress");
      }
    });
    let chunksEmbedded = 0;
    if (fullCatchUp) {
      const { chunks, embeddedChunks } = await backend.stats();
      let more = true;
      while (more) {
        const pass = await this.#catchUp(this.#batchSize * 16);
        chunksFromCache += pass.fromCache;
        chunksEmbedded += pass.embedded;
        more = pass.morePending && this.embeddings.mode() === "hybrid" && pass.fromCache + pass.embedded > 0;
        const done = Math.min(chunks, embeddedChunks + chunksFromCache + chunksEmbedded);
        syncOptions.onProgress?.({ phase: "embed", done, total: chunks });
      }
    } else {
      this.#scheduleCatchUp();
    }
    const report: SyncReport = {
      filesScanned: files.length,
      filesIndexed,
      filesUnchanged: files.length - filesIndexed,
      filesRemoved,
      chunksIndexed,
      chunksFromCache,
      chunksEmbedded,
      durationMs: clock() - started,
    };
    this.#lastSync = { at: clock(), report };
    // Which thread prepared the files: operators (and the build's test) can see the worker at work.
    const filesPreparedInWorker = this.#preparer.stats().preparedInWorker - inWorkerBefore;
    logger.info({ ...report, filesPreparedInWorker }, "memory sync done");
    this.#needsFullSync = false;
    return report;
  }

  #scheduleCatchUp(): void {
    if (
      this.#catchUpScheduled ||
      this.#closed ||
      !this.embeddings.configured ||
      this.embeddings.mode() === "text"
    )
      return;
    this.#catchUpScheduled = true;
    void this.#enqueue(async () => {
      this.#catchUpScheduled = false;
      const pass = await this.#catchUp(this.#batchSize * 8);
      if (pass.morePending && pass.fromCache + pass.embedded > 0) setImmediate(() => this.#scheduleCatchUp());
    }).catch((error: unknown) =>
      this.#logger.warn({ error: describeError(error) }, "embedding catch-up failed"),
    );
  }

  #onFilesChanged(paths: ReadonlySet<string> | "all"): void {
    void this.#enqueue(async () => {
      if (paths === "all" || this.#needsFullSync) {
        await this.#syncAll({}, false);
        return;
      }
      await this.#files.indexPaths([...paths], false, false, (relative, result) => {
        this.#logger.debug(
          { path: relative, outcome: result?.outcome, chunks: result?.chunks },
          "memory file updated",
        );
      });
      this.#scheduleCatchUp();
    }).catch((error: unknown) => {
      this.#needsFullSync = true;
      this.#logger.warn(
        { error: describeError(error) },
        "memory index update failed; retrying on the next interval",
      );
    });
  }
}
