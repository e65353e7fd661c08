import * as path from "node:path";
import { describeError, type Embedder, type Logger, silentLogger } from "@almanac/core";
import { listMemoryFiles } from "@almanac/memory-files";
import type { ChunkMarkdownOptions } from "./chunk-markdown.js";
import { createChunkPreparer } from "./chunk-preparer.js";
import { catchUpEmbeddings } from "./embedding-catch-up.js";
import {
  createEmbeddingGate,
  type EmbeddingGate,
  type EmbeddingGateStatus,
  isEmbeddingGate,
} from "./embedding-gate.js";
import { createFileIndexing } from "./index-files.js";
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
  const { backend } = options;
  const workspace = path.resolve(options.workspace);
  const logger = (options.logger ?? silentLogger).child({
    component: "memory-indexer",
    backend: backend.kind,
  });
  const embeddings =
    options.embedder === undefined
      ? createEmbeddingGate({ logger })
      : isEmbeddingGate(options.embedder)
        ? options.embedder
        : createEmbeddingGate({ embedder: options.embedder, logger });
  const clock = options.clock ?? Date.now;
  const batchSize = options.embedBatchSize ?? 64;
  const retryIntervalMs = options.retryIntervalMs ?? 60_000;
  const progressIntervalMs = options.progressIntervalMs ?? 5000;
  let tail: Promise<unknown> = Promise.resolve();
  let queued = 0;
  let watcher: MemoryWatcher | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  let lastSync: MemoryIndexStatus["lastSync"];
  let catchUpScheduled = false;
  let needsFullSync = false;
  let blockedReason: string | undefined;
  let closed = false;
  const preparer = createChunkPreparer({
    logger,
    ...(options.chunking === undefined ? {} : { chunking: options.chunking }),
  });

  const enqueue = <T>(task: () => Promise<T>): Promise<T> => {
    queued += 1;
    const run = tail.then(task, task).finally(() => {
      queued -= 1;
    });
    tail = run.catch(() => undefined);
    return run;
  };

  const files = createFileIndexing({ backend, workspace, preparer, embeddings, logger });
  const indexPaths = files.indexPaths;

  /** One catch-up pass; logs a vector-size problem once instead of on every pass. */
  async function catchUp(maxChunks: number) {
    if (!embeddings.configured || blockedReason !== undefined)
      return { fromCache: 0, embedded: 0, morePending: false };
    const report = await catchUpEmbeddings(backend, embeddings, { batchSize, maxChunks });
    if (report.blocked !== undefined) {
      blockedReason = report.blocked;
      logger.error(
        { error: report.blocked },
        "vectors do not fit the index: memory search stays full-text until reindex",
      );
    }
    return report;
  }

  async function dropStaleVectors(): Promise<void> {
    if (!embeddings.configured) return;
    const { vectorModel } = await backend.stats();
    if (vectorModel !== undefined && vectorModel !== embeddings.modelName) {
      logger.warn(
        { from: vectorModel, to: embeddings.modelName },
        "embedding model changed: re-embedding every chunk",
      );
      await backend.clearVectors();
    }
  }

  async function syncAll(syncOptions: SyncOptions, fullCatchUp: boolean): Promise<SyncReport> {
    const started = clock();
    await dropStaleVectors();
    const files = await listMemoryFiles(workspace);
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
    const inWorkerBefore = preparer.stats().preparedInWorker;
    await indexPaths(files, true, true, (_relative, result) => {
      if (result?.outcome === "indexed") filesIndexed += 1;
      if (result?.outcome === "removed") filesRemoved += 1;
      chunksIndexed += result?.chunks ?? 0;
      chunksFromCache += result?.fromCache ?? 0;
      done += 1;
      syncOptions.onProgress?.({ phase: "index", done, total: files.length });
      if (clock() - lastLog >= progressIntervalMs) {
        lastLog = clock();
        logger.info({ done, total: files.length, chunksIndexed }, "memory sync progress");
      }
    });
    let chunksEmbedded = 0;
    if (fullCatchUp) {
      const { chunks, embeddedChunks } = await backend.stats();
      let more = true;
      while (more) {
        const pass = await catchUp(batchSize * 16);
        chunksFromCache += pass.fromCache;
        chunksEmbedded += pass.embedded;
        more = pass.morePending && embeddings.mode() === "hybrid" && pass.fromCache + pass.embedded > 0;
        const done = Math.min(chunks, embeddedChunks + chunksFromCache + chunksEmbedded);
        syncOptions.onProgress?.({ phase: "embed", done, total: chunks });
      }
    } else {
      scheduleCatchUp();
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
    lastSync = { at: clock(), report };
    // Which thread prepared the files: operators (and the build's test) can see the worker at work.
    const filesPreparedInWorker = preparer.stats().preparedInWorker - inWorkerBefore;
    logger.info({ ...report, filesPreparedInWorker }, "memory sync done");
    needsFullSync = false;
    return report;
  }

  function scheduleCatchUp(): void {
    if (catchUpScheduled || closed || !embeddings.configured || embeddings.mode() === "text") return;
    catchUpScheduled = true;
    void enqueue(async () => {
      catchUpScheduled = false;
      const pass = await catchUp(batchSize * 8);
      if (pass.morePending && pass.fromCache + pass.embedded > 0) setImmediate(scheduleCatchUp);
    }).catch((error: unknown) => logger.warn({ error: describeError(error) }, "embedding catch-up failed"));
  }

  function onFilesChanged(paths: ReadonlySet<string> | "all"): void {
    void enqueue(async () => {
      if (paths === "all" || needsFullSync) {
        await syncAll({}, false);
        return;
      }
      await indexPaths([...paths], false, false, (relative, result) => {
        logger.debug(
          { path: relative, outcome: result?.outcome, chunks: result?.chunks },
          "memory file updated",
        );
      });
      scheduleCatchUp();
    }).catch((error: unknown) => {
      needsFullSync = true;
      logger.warn(
        { error: describeError(error) },
        "memory index update failed; retrying on the next interval",
      );
    });
  }

  return {
    embeddings,
    sync: (syncOptions = {}) => enqueue(() => syncAll(syncOptions, true)),

    async watch() {
      if (watcher !== undefined || closed) return;
      watcher = await watchMemoryFiles({
        workspace,
        logger,
        onChange: onFilesChanged,
        ...(options.debounceMs === undefined ? {} : { debounceMs: options.debounceMs }),
      });
      unsubscribe = embeddings.onModeChange((mode) => {
        if (mode === "hybrid") scheduleCatchUp();
      });
      retryTimer = setInterval(() => {
        if (needsFullSync) onFilesChanged("all");
        else scheduleCatchUp();
      }, retryIntervalMs);
      retryTimer.unref();
    },

    async status() {
      const stats = await backend.stats();
      return {
        backend: backend.kind,
        files: stats.files,
        chunks: stats.chunks,
        embeddedChunks: stats.embeddedChunks,
        pendingChunks: stats.chunks - stats.embeddedChunks,
        dimensions: stats.dimensions,
        lastSync,
        watching: watcher !== undefined,
        embedding: embeddings.status(),
      };
    },

    reindex: (syncOptions = {}) =>
      enqueue(async () => {
        logger.info({}, "memory reindex started");
        await backend.clear();
        blockedReason = undefined;
        return syncAll(syncOptions, true);
      }),

    async whenIdle() {
      for (;;) {
        await tail;
        await new Promise((resolve) => setImmediate(resolve));
        if (queued === 0 && watcher?.pending() !== true && !catchUpScheduled) return;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },

    async close() {
      closed = true;
      if (retryTimer !== undefined) clearInterval(retryTimer);
      unsubscribe?.();
      await watcher?.close();
      watcher = undefined;
      await tail;
      await preparer.close();
    },
  };
}
