import { lstatSync, readFileSync, type Stats } from "node:fs";
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { describeError, type Embedder, isAlmanacError, type Logger, silentLogger } from "@almanac/core";
import { listMemoryFiles } from "@almanac/memory-files";
import { type ChunkMarkdownOptions, sha256 } from "./chunk-markdown.js";
import { createChunkPreparer, type PreparationJob } from "./chunk-preparer.js";
import { catchUpEmbeddings } from "./embedding-catch-up.js";
import {
  createEmbeddingGate,
  type EmbeddingGate,
  type EmbeddingGateStatus,
  isEmbeddingGate,
} from "./embedding-gate.js";
import { memorySource } from "./memory-source.js";
import { type MemoryWatcher, watchMemoryFiles } from "./memory-watcher.js";
import type { FileUpsert, IndexChunk, MemoryIndexBackend } from "./types.js";

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

type FileOutcome = "indexed" | "unchanged" | "removed" | "absent";

interface FileResult {
  readonly outcome: FileOutcome;
  readonly chunks: number;
  readonly fromCache: number;
}

/** What reading a file found, before the index is touched. */
type FileChange =
  | { readonly kind: "absent" }
  | { readonly kind: "removed" }
  | { readonly kind: "unchanged" }
  | { readonly kind: "changed"; readonly stats: Stats; readonly bytes: Buffer; readonly hash: string };

/**
 * Files a sync reads and queues for preparation ahead of the one it writes, and at most how many bytes of
 * them: the index worker prepares them while the main thread writes a batch (see chunk-preparer.ts). Reads
 * are one at a time (those over {@link SYNC_READ_BYTES} without blocking, but no longer several at once).
 */
const PREPARE_AHEAD_FILES = 128;
const PREPARE_AHEAD_BYTES = 4 * 1024 * 1024;

/**
 * Files up to this size are stat'ed and read synchronously: a memory file is a few kilobytes, which a blocking
 * read takes microseconds for, while fs/promises spent ~150 us of main-thread time per file on its round trips
 * (lstat, open, fstat, read, close). Indexing bench/search's 400 files: 2,270-2,597 chunks/s with promises,
 * 2,584-3,130 with blocking reads (6 interleaved pairs, load ~2). Larger files are read without blocking the server.
 */
const SYNC_READ_BYTES = 1024 * 1024;

/**
 * Chunks written in one backend call (one SQLite transaction). Larger batches commit less often, which is
 * most of the backend's cost; this bounds what a sync holds in memory and how long a search waits on a write.
 */
const UPSERT_BATCH_CHUNKS = 500;

/**
 * The longest a sync keeps the event loop before letting other work in. Its reads (small files), cutting and
 * SQLite writes are synchronous, so without this a sync runs in microtasks from start to end: the server's
 * first sync of the year corpus (~0.3 s, more on a busy machine) held `/healthz` and every request behind it.
 * A turn of the loop every few milliseconds costs the sync well under 1 %.
 */
const SYNC_SLICE_MS = 5;

/** Resolves after the event loop's next turn (timers, I/O and requests that were waiting run first). */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A changed file chunked and analysed, waiting in a batch for the backend. */
interface PreparedUpsert {
  readonly relative: string;
  readonly upsert: FileUpsert;
  readonly fromCache: number;
}

/** A file read ahead: what changed, and its queued preparation when it changed. */
interface ReadAhead {
  readonly relative: string;
  readonly change: { readonly value: FileChange } | { readonly error: unknown };
  readonly job: PreparationJob | undefined;
}

/** The result of a file written to the index. */
function indexed(prepared: PreparedUpsert): FileResult {
  return { outcome: "indexed", chunks: prepared.upsert.chunks.length, fromCache: prepared.fromCache };
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

  const cachedVectorsFor = async (chunks: readonly IndexChunk[]) => {
    const model = embeddings.modelName;
    if (model === undefined) return undefined;
    const cached = await backend.cachedVectors(model, [...new Set(chunks.map((chunk) => chunk.hash))]);
    return { model, vectors: chunks.map((chunk) => cached.get(chunk.hash)) };
  };

  /**
   * Reads what changed in one file (the I/O half of {@link indexFile}, which a sync runs a few files
   * ahead of the indexing). `trustStat`: an unchanged size and mtime mean an unchanged file (start-up
   * sync). A watcher event says otherwise, so then the content hash decides (mtime ticks can be coarse).
   */
  async function readChange(relative: string, trustStat: boolean): Promise<FileChange> {
    const absolute = path.join(workspace, relative);
    const known = await backend.fileState(relative);
    let stats: Stats | undefined;
    try {
      stats = lstatSync(absolute);
    } catch (error) {
      const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    }
    if (stats === undefined || !stats.isFile()) return { kind: known === undefined ? "absent" : "removed" };
    if (trustStat && known !== undefined && known.mtimeMs === stats.mtimeMs && known.size === stats.size) {
      return { kind: "unchanged" };
    }
    const bytes = stats.size <= SYNC_READ_BYTES ? readFileSync(absolute) : await readFile(absolute);
    const hash = sha256(bytes);
    if (known !== undefined && known.hash === hash) return { kind: "unchanged" };
    return { kind: "changed", stats, bytes, hash };
  }

  /** A changed file's upsert from its prepared chunks, with any vectors the cache holds. */
  async function toUpsert(
    relative: string,
    change: Extract<FileChange, { kind: "changed" }>,
    chunks: IndexChunk[],
  ): Promise<PreparedUpsert> {
    const { stats, hash } = change;
    const cached = await cachedVectorsFor(chunks);
    const file = {
      path: relative,
      hash,
      mtimeMs: stats.mtimeMs,
      size: stats.size,
      source: memorySource(relative),
    };
    const fromCache = cached?.vectors.filter((vector) => vector !== undefined).length ?? 0;
    return {
      relative,
      upsert: { file, chunks, ...(cached === undefined ? {} : { embeddings: cached }) },
      fromCache,
    };
  }

  /**
   * Indexes `paths` in order, reading and queueing up to {@link PREPARE_AHEAD_FILES} files ahead for the
   * preparer and writing changed files in batches of about {@link UPSERT_BATCH_CHUNKS} chunks. `onDone` hears
   * each file once its change is in the index (`undefined`: skipped). Errors of the backend (Almanac errors) stop the run; a file that cannot be read
   * or written is skipped with a warning when `skipFailures`, and stops the run otherwise.
   */
  async function indexPaths(
    paths: readonly string[],
    trustStat: boolean,
    skipFailures: boolean,
    onDone: (relative: string, result: FileResult | undefined) => void,
  ): Promise<void> {
    const skip = (relative: string, error: unknown): void => {
      if (isAlmanacError(error) || !skipFailures) throw error;
      logger.warn({ path: relative, error: describeError(error) }, "cannot index memory file; skipped");
      onDone(relative, undefined);
    };
    let batch: PreparedUpsert[] = [];
    let batchChunks = 0;
    const flush = async (): Promise<void> => {
      const written = batch;
      batch = [];
      batchChunks = 0;
      if (written.length === 0) return;
      try {
        await backend.upsertFiles(written.map((prepared) => prepared.upsert));
      } catch (error) {
        if (isAlmanacError(error) || written.length === 1) {
          skip(written[0]!.relative, error);
          return;
        }
        // Find the file the batch failed on: write them one by one, skipping only that one.
        for (const prepared of written) {
          try {
            await backend.upsertFiles([prepared.upsert]);
          } catch (fileError) {
            skip(prepared.relative, fileError);
            continue;
          }
          onDone(prepared.relative, indexed(prepared));
        }
        return;
      }
      for (const prepared of written) onDone(prepared.relative, indexed(prepared));
    };
    const ahead: ReadAhead[] = [];
    let aheadBytes = 0;
    let changedBytes = 0;
    let next = 0;
    const readAhead = async (): Promise<void> => {
      while (next < paths.length && ahead.length < PREPARE_AHEAD_FILES && aheadBytes < PREPARE_AHEAD_BYTES) {
        const relative = paths[next]!;
        next += 1;
        let change: ReadAhead["change"];
        try {
          change = { value: await readChange(relative, trustStat) };
        } catch (error) {
          change = { error };
        }
        const changed = "value" in change && change.value.kind === "changed" ? change.value : undefined;
        changedBytes += changed?.bytes.byteLength ?? 0;
        // The rest of the run, guessed from what changed so far: tells the preparer whether a worker pays off.
        const coming = ((paths.length - next) * changedBytes) / next;
        const job = changed === undefined ? undefined : preparer.submit(relative, changed.bytes, coming);
        aheadBytes += job?.bytes ?? 0;
        ahead.push({ relative, change, job });
      }
    };
    let sliceStarted = performance.now();
    try {
      for (;;) {
        if (performance.now() - sliceStarted >= SYNC_SLICE_MS) {
          await nextTurn();
          sliceStarted = performance.now();
        }
        await readAhead();
        const entry = ahead.shift();
        if (entry === undefined) break;
        const { relative, change, job } = entry;
        aheadBytes -= job?.bytes ?? 0;
        try {
          if ("error" in change) throw change.error;
          const { value } = change;
          if (value.kind === "absent" || value.kind === "unchanged") {
            onDone(relative, { outcome: value.kind, chunks: 0, fromCache: 0 });
          } else if (value.kind === "removed") {
            await backend.deleteFile(relative);
            onDone(relative, { outcome: "removed", chunks: 0, fromCache: 0 });
          } else if (job !== undefined) {
            const prepared = await toUpsert(relative, value, await preparer.take(job));
            batch.push(prepared);
            batchChunks += prepared.upsert.chunks.length;
          }
        } catch (error) {
          skip(relative, error);
        }
        if (batchChunks >= UPSERT_BATCH_CHUNKS) await flush();
      }
      await flush();
    } finally {
      // A run stopped by an error leaves its queued files untaken.
      for (const { job } of ahead) if (job !== undefined) preparer.discard(job);
    }
  }

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
