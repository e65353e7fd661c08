import { lstatSync, readFileSync, type Stats } from "node:fs";
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { describeError, isAlmanacError, type Logger } from "@almanac/core";
import { sha256 } from "./chunk-markdown.js";
import type { ChunkPreparer, PreparationJob } from "./chunk-preparer.js";
import type { EmbeddingGate } from "./embedding-gate.js";
import { memorySource } from "./memory-source.js";
import type { FileUpsert, IndexChunk, MemoryIndexBackend } from "./types.js";

/**
 * The indexing of memory files, one run at a time: reading what changed, handing it to the chunk preparer a few
 * files ahead, and writing the prepared files to the backend in batches. The memory indexer (memory-indexer.ts)
 * decides when a run happens (a sync, the watcher's batches) and keeps the queue and the status.
 */

/** What became of one file in a run. */
export type FileOutcome = "indexed" | "unchanged" | "removed" | "absent";

/** One file's result in a run. */
export interface FileResult {
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
 * read takes microseconds for, fewer than fs/promises' five round trips through the thread pool (lstat, open,
 * fstat, read, close); indexing measured faster this way (bench/search.ts). Larger files are read without
 * blocking the server.
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

/** What {@link createFileIndexing} works with (the memory indexer's own parts). */
export interface FileIndexingOptions {
  readonly backend: MemoryIndexBackend;
  /** The workspace root, absolute. */
  readonly workspace: string;
  readonly preparer: ChunkPreparer;
  /** Its model name says which cached vectors a file's chunks may reuse. */
  readonly embeddings: EmbeddingGate;
  readonly logger: Logger;
}

/** Indexes memory files: see {@link FileIndexing.indexPaths}. */
export interface FileIndexing {
  /**
   * Indexes `paths` in order, reading and queueing up to {@link PREPARE_AHEAD_FILES} files ahead for the
   * preparer and writing changed files in batches of about {@link UPSERT_BATCH_CHUNKS} chunks. `trustStat`: an
   * unchanged size and mtime mean an unchanged file (a start-up sync). `onDone` hears each file once its change
   * is in the index (`undefined`: skipped). Errors of the backend (Almanac errors) stop the run; a file that
   * cannot be read or written is skipped with a warning when `skipFailures`, and stops the run otherwise.
   */
  indexPaths(
    paths: readonly string[],
    trustStat: boolean,
    skipFailures: boolean,
    onDone: (relative: string, result: FileResult | undefined) => void,
  ): Promise<void>;
}

/**
 * Creates the {@link FileIndexing} of one indexer. It holds nothing between runs but its options: each run's
 * state (the batch, the files read ahead) lives in an {@link IndexingRun}. `indexPaths` uses no `this`, so the
 * indexer may hold it detached.
 */
export function createFileIndexing(options: FileIndexingOptions): FileIndexing {
  return {
    indexPaths: (paths, trustStat, skipFailures, onDone) =>
      new IndexingRun(options, paths, trustStat, skipFailures, onDone).run(),
  };
}

/**
 * Reads what changed in one file (what a run does a few files ahead of the indexing). `trustStat`: an unchanged size and mtime mean an unchanged file (start-up
 * sync). A watcher event says otherwise, so then the content hash decides (mtime ticks can be coarse).
 */
async function readChange(
  { backend, workspace }: FileIndexingOptions,
  relative: string,
  trustStat: boolean,
): Promise<FileChange> {
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

/** The vectors the backend's cache holds for `chunks` under the current model (none without a model). */
async function cachedVectorsFor({ backend, embeddings }: FileIndexingOptions, chunks: readonly IndexChunk[]) {
  const model = embeddings.modelName;
  if (model === undefined) return undefined;
  const cached = await backend.cachedVectors(model, [...new Set(chunks.map((chunk) => chunk.hash))]);
  return { model, vectors: chunks.map((chunk) => cached.get(chunk.hash)) };
}

/** A changed file's upsert from its prepared chunks, with any vectors the cache holds. */
async function toUpsert(
  options: FileIndexingOptions,
  relative: string,
  change: Extract<FileChange, { kind: "changed" }>,
  chunks: IndexChunk[],
): Promise<PreparedUpsert> {
  const { stats, hash } = change;
  const cached = await cachedVectorsFor(options, chunks);
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

/** One {@link FileIndexing.indexPaths} call: the files read ahead, the batch being filled, and where it stands. */
class IndexingRun {
  readonly #options: FileIndexingOptions;
  readonly #paths: readonly string[];
  readonly #trustStat: boolean;
  readonly #skipFailures: boolean;
  readonly #onDone: (relative: string, result: FileResult | undefined) => void;
  #batch: PreparedUpsert[] = [];
  #batchChunks = 0;
  readonly #ahead: ReadAhead[] = [];
  #aheadBytes = 0;
  #changedBytes = 0;
  /** The index in `paths` of the next file to read ahead. */
  #next = 0;

  constructor(
    options: FileIndexingOptions,
    paths: readonly string[],
    trustStat: boolean,
    skipFailures: boolean,
    onDone: (relative: string, result: FileResult | undefined) => void,
  ) {
    this.#options = options;
    this.#paths = paths;
    this.#trustStat = trustStat;
    this.#skipFailures = skipFailures;
    this.#onDone = onDone;
  }

  /** Indexes every path in order; see {@link FileIndexing.indexPaths}. */
  async run(): Promise<void> {
    let sliceStarted = performance.now();
    try {
      for (;;) {
        if (performance.now() - sliceStarted >= SYNC_SLICE_MS) {
          await nextTurn();
          sliceStarted = performance.now();
        }
        await this.#readAhead();
        const entry = this.#ahead.shift();
        if (entry === undefined) break;
        this.#aheadBytes -= entry.job?.bytes ?? 0;
        try {
          await this.#take(entry);
        } catch (error) {
          this.#skip(entry.relative, error);
        }
        if (this.#batchChunks >= UPSERT_BATCH_CHUNKS) await this.#flush();
      }
      await this.#flush();
    } finally {
      // A run stopped by an error leaves its queued files untaken.
      for (const { job } of this.#ahead) if (job !== undefined) this.#options.preparer.discard(job);
    }
  }

  /** Settles one file read ahead: reports it, deletes it, or adds its prepared upsert to the batch. */
  async #take({ relative, change, job }: ReadAhead): Promise<void> {
    if ("error" in change) throw change.error;
    const { value } = change;
    if (value.kind === "absent" || value.kind === "unchanged") {
      this.#onDone(relative, { outcome: value.kind, chunks: 0, fromCache: 0 });
    } else if (value.kind === "removed") {
      await this.#options.backend.deleteFile(relative);
      this.#onDone(relative, { outcome: "removed", chunks: 0, fromCache: 0 });
    } else if (job !== undefined) {
      const prepared = await toUpsert(this.#options, relative, value, await this.#options.preparer.take(job));
      this.#batch.push(prepared);
      this.#batchChunks += prepared.upsert.chunks.length;
    }
  }

  /** Skips a file that failed with a warning, or rethrows when the run may not skip (or the backend failed). */
  #skip(relative: string, error: unknown): void {
    if (isAlmanacError(error) || !this.#skipFailures) throw error;
    this.#options.logger.warn(
      { path: relative, error: describeError(error) },
      "cannot index memory file; skipped",
    );
    this.#onDone(relative, undefined);
  }

  /** Writes the batch to the backend in one call, then reports its files. */
  async #flush(): Promise<void> {
    const written = this.#batch;
    this.#batch = [];
    this.#batchChunks = 0;
    if (written.length === 0) return;
    const { backend } = this.#options;
    try {
      await backend.upsertFiles(written.map((prepared) => prepared.upsert));
    } catch (error) {
      if (isAlmanacError(error) || written.length === 1) {
        this.#skip(written[0]!.relative, error);
        return;
      }
      // Find the file the batch failed on: write them one by one, skipping only that one.
      for (const prepared of written) {
        try {
          await backend.upsertFiles([prepared.upsert]);
        } catch (fileError) {
          this.#skip(prepared.relative, fileError);
          continue;
        }
        this.#onDone(prepared.relative, indexed(prepared));
      }
      return;
    }
    for (const prepared of written) this.#onDone(prepared.relative, indexed(prepared));
  }

  /** Reads and queues files for the preparer until {@link PREPARE_AHEAD_FILES} or {@link PREPARE_AHEAD_BYTES}. */
  async #readAhead(): Promise<void> {
    const paths = this.#paths;
    while (
      this.#next < paths.length &&
      this.#ahead.length < PREPARE_AHEAD_FILES &&
      this.#aheadBytes < PREPARE_AHEAD_BYTES
    ) {
      const relative = paths[this.#next]!;
      this.#next += 1;
      let change: ReadAhead["change"];
      try {
        change = { value: await readChange(this.#options, relative, this.#trustStat) };
      } catch (error) {
        change = { error };
      }
      const changed = "value" in change && change.value.kind === "changed" ? change.value : undefined;
      this.#changedBytes += changed?.bytes.byteLength ?? 0;
      // The rest of the run, guessed from what changed so far: tells the preparer whether a worker pays off.
      const coming = ((paths.length - this.#next) * this.#changedBytes) / this.#next;
      const job =
        changed === undefined ? undefined : this.#options.preparer.submit(relative, changed.bytes, coming);
      this.#aheadBytes += job?.bytes ?? 0;
      this.#ahead.push({ relative, change, job });
    }
  }
}
