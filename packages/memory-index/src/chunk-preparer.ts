import type { Worker } from "node:worker_threads";
import { describeError, InternalError, type Logger } from "@almanac/core";
import type { ChunkMarkdownOptions } from "./chunk-markdown.js";
import { searchableText } from "./hybrid-score.js";
import {
  type IndexWorkerReply,
  type IndexWorkerRequest,
  isIndexWorkerReply,
  withWireAnalysis,
} from "./index-worker-protocol.js";
import { analyzedChunk, chunkIndexFile, prepareIndexChunks } from "./prepare-index-chunks.js";
import { startIndexWorker } from "./start-index-worker.js";
import type { IndexChunk, MemoryChunk } from "./types.js";

/** Options of {@link createChunkPreparer}. */
export interface ChunkPreparerOptions {
  readonly chunking?: ChunkMarkdownOptions;
  readonly logger: Logger;
  /** Starts the index worker (default: `index-worker.ts`, or the build's bundled entry); tests inject others. */
  readonly startWorker?: () => Worker;
  /** Idle time after which the worker is stopped, giving its memory back (default 10 s). */
  readonly idleMs?: number;
  /** Bytes of files expected in one go that start the worker (default {@link workerStartBytes}). */
  readonly workerStartBytes?: number;
}

/** A file queued for preparation (opaque to callers). */
export interface PreparationJob {
  readonly bytes: number;
}

/**
 * Prepares memory files' chunks (token counts, index terms) in order. When there is enough of them, a worker
 * thread finds the chunks' index terms while this thread counts tokens, cuts the next files into chunks and
 * writes a batch to the index: on two cores a sync then costs about the larger of the two halves instead of
 * their sum. Split by stage, not by file, so each thread warms up (JIT, the token counter's table and learnt
 * pieces, the segmenter) only the code it runs: the worker started cold on the counting too, and both threads
 * paid that.
 */
export interface ChunkPreparer {
  /**
   * Queues a file. `comingBytes`: what the caller expects to submit after it in the same go (a sync's estimate
   * from the files it has read so far); enough in one go start the worker (lazily; see {@link workerStartBytes}).
   */
  submit(relative: string, bytes: Uint8Array, comingBytes?: number): PreparationJob;
  /**
   * The chunks of a submitted file. A job the worker has not been sent is prepared on this thread; while the
   * worker is still busy with this one, this thread prepares queued jobs from the back instead of waiting.
   * Throws what preparing the file throws (always as thrown on this thread: chunks the worker failed on are
   * analysed again here).
   */
  take(job: PreparationJob): Promise<IndexChunk[]>;
  /** Files prepared on this thread alone, and files whose chunks the worker analysed, so far (logs, tests). */
  stats(): { readonly preparedHere: number; readonly preparedInWorker: number };
  /** Resolves true once the worker is ready, false when there is none or it stopped (tests). */
  whenWorkerReady(): Promise<boolean>;
  /** Forgets a submitted file that will not be taken (a sync that stopped early). */
  discard(job: PreparationJob): void;
  /** Stops the worker; jobs still queued are prepared on this thread when taken. */
  close(): Promise<void>;
}

/**
 * Bytes of files in one go (submitted since the preparer was last idle, plus those the caller expects) that
 * start the worker; a single saved file never starts it. Starting the worker takes a fraction of a second, so a
 * corpus of a few megabytes indexes faster with it and one of about a megabyte (a year of daily logs) faster
 * without it (bench/search.ts).
 */
export const workerStartBytes = 1.5 * 1024 * 1024;

/**
 * Bytes of files whose chunks are with the worker at once: enough that it keeps busy while the main thread
 * writes a batch of 500 chunks (~50 ms; ~64 files of ~6 KB at the worker's ~0.4-0.8 ms a file), few enough
 * that the main thread has queued files left to prepare itself when it would wait.
 */
const WORKER_IN_FLIGHT_BYTES = 384 * 1024;

type JobState =
  | { readonly kind: "queued" }
  | { readonly kind: "sent" }
  | { readonly kind: "prepared"; readonly chunks: IndexChunk[] }
  | { readonly kind: "thrown"; readonly error: unknown }
  | { readonly kind: "failed-in-worker" };

interface Job extends PreparationJob {
  readonly id: number;
  readonly relative: string;
  readonly content: Uint8Array;
  /** Its chunks, once cut on this thread for the worker to analyse. */
  chunks: MemoryChunk[] | undefined;
  state: JobState;
  wake: (() => void) | undefined;
}

/**
 * How often a take that keeps this thread busy (preparing while the worker starts, or taking queued files
 * while it works) lets the worker's messages in: a sync otherwise runs in microtasks and never sees them, and a
 * turn of the event loop per file cost the year corpus's sync (366 files, ~0.25 s) 40-80 ms.
 */
const YIELD_EVERY_MS = 3;

/** Resolves after the event loop's next turn, once messages already received have been handled. */
const yieldToMessages = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Gives a job its state and wakes the take waiting for it, if any. */
function settle(job: Job, state: JobState): void {
  job.state = state;
  const { wake } = job;
  job.wake = undefined;
  wake?.();
}

/** Creates a preparer; the worker starts on the first large enough backlog. */
export function createChunkPreparer(options: ChunkPreparerOptions): ChunkPreparer {
  return new StagedChunkPreparer(options);
}

/**
 * The {@link ChunkPreparer} {@link createChunkPreparer} makes: a queue of jobs, the worker (while it is useful)
 * and the byte counts that decide when it starts. Named apart from the interface so callers and fakes depend on
 * the shape, not on this class's private state.
 */
class StagedChunkPreparer implements ChunkPreparer {
  readonly #chunking: ChunkMarkdownOptions | undefined;
  readonly #logger: Logger;
  readonly #idleMs: number;
  readonly #startWorker: () => Worker;
  readonly #startBytes: number;
  readonly #queue: Job[] = [];
  readonly #inFlight = new Map<number, Job>();
  #inFlightBytes = 0;
  /** Bytes submitted and not yet taken. */
  #backlogBytes = 0;
  /** Bytes submitted since the preparer was last idle (nothing submitted and untaken). */
  #burstBytes = 0;
  /** What the last submit said would follow it. */
  #comingBytes = 0;
  #nextId = 0;
  #worker: Worker | undefined;
  #ready = false;
  #broken = false;
  #idleTimer: NodeJS.Timeout | undefined;
  #lastYield = performance.now();
  #preparedHere = 0;
  #preparedInWorker = 0;
  #readyWaiters: ((ready: boolean) => void)[] = [];

  constructor(options: ChunkPreparerOptions) {
    this.#chunking = options.chunking;
    this.#logger = options.logger;
    this.#idleMs = options.idleMs ?? 10_000;
    this.#startWorker = options.startWorker ?? startIndexWorker;
    this.#startBytes = options.workerStartBytes ?? workerStartBytes;
  }

  submit(relative: string, content: Uint8Array, coming = 0): PreparationJob {
    const job: Job = {
      id: this.#nextId++,
      relative,
      content,
      bytes: content.byteLength,
      chunks: undefined,
      state: { kind: "queued" },
      wake: undefined,
    };
    this.#queue.push(job);
    if (this.#backlogBytes === 0) this.#burstBytes = 0;
    this.#backlogBytes += job.bytes;
    this.#burstBytes += job.bytes;
    this.#comingBytes = coming;
    this.#ensureWorker();
    this.#pump();
    return job;
  }

  async take(handle: PreparationJob): Promise<IndexChunk[]> {
    const job = handle as Job;
    const queue = this.#queue;
    try {
      for (;;) {
        const { state } = job;
        if (state.kind === "prepared") return state.chunks;
        if (state.kind === "thrown") throw state.error;
        if (state.kind === "queued" && this.#worker !== undefined && !this.#ready) {
          // While the worker starts, this thread cuts the queued files in order (its half of the work either
          // way), and analyses this one itself only once all are cut: analysing here too made it warm up
          // the analysis (JIT, the segmenter) as well, a slow start for the first files.
          const uncut = queue.find((queued) => queued.chunks === undefined);
          if (uncut !== undefined) this.#cutHere(uncut);
          await this.#yieldNowAndThen(); // its "ready"
          if (job.state.kind !== "queued" || uncut !== undefined) continue;
        }
        if (job.state.kind === "queued" || job.state.kind === "failed-in-worker") {
          const at = queue.indexOf(job);
          if (at >= 0) queue.splice(at, 1);
          this.#prepareHere(job);
          continue;
        }
        // Sent and not back yet: prepare a queued file meanwhile (the last, which is needed last).
        const stolen = queue.pop();
        if (stolen !== undefined) {
          this.#prepareHere(stolen);
          await this.#yieldNowAndThen();
          continue;
        }
        await new Promise<void>((resolve) => {
          job.wake = resolve;
        });
        this.#lastYield = performance.now();
      }
    } finally {
      this.#backlogBytes -= job.bytes;
    }
  }

  discard(handle: PreparationJob): void {
    const job = handle as Job;
    const at = this.#queue.indexOf(job);
    if (at >= 0) this.#queue.splice(at, 1);
    this.#backlogBytes -= job.bytes;
  }

  stats(): { readonly preparedHere: number; readonly preparedInWorker: number } {
    return { preparedHere: this.#preparedHere, preparedInWorker: this.#preparedInWorker };
  }

  whenWorkerReady(): Promise<boolean> {
    if (this.#ready) return Promise.resolve(true);
    if (this.#worker === undefined) return Promise.resolve(false);
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#stopWorker();
    this.#reclaim();
  }

  /** Lets the worker's messages in if this thread has been busy for {@link YIELD_EVERY_MS}. */
  async #yieldNowAndThen(): Promise<void> {
    if (performance.now() - this.#lastYield < YIELD_EVERY_MS) return;
    await yieldToMessages();
    this.#lastYield = performance.now();
  }

  #prepareHere(job: Job): void {
    this.#preparedHere += 1;
    try {
      const chunks =
        job.chunks === undefined
          ? prepareIndexChunks(job.relative, job.content, this.#chunking)
          : job.chunks.map(analyzedChunk);
      job.state = { kind: "prepared", chunks };
    } catch (error) {
      job.state = { kind: "thrown", error };
    }
  }

  /**
   * This thread's half of a job: counting tokens and cutting the file into chunks (a file that cannot be cut
   * throws here, as it always has: the job settles with the error). False when it threw.
   */
  #cutHere(job: Job): boolean {
    if (job.chunks !== undefined) return true;
    try {
      job.chunks = chunkIndexFile(job.relative, job.content, this.#chunking);
      return true;
    } catch (error) {
      const at = this.#queue.indexOf(job);
      if (at >= 0) this.#queue.splice(at, 1);
      settle(job, { kind: "thrown", error });
      return false;
    }
  }

  #tellReady(isReady: boolean): void {
    const waiters = this.#readyWaiters;
    this.#readyWaiters = [];
    for (const waiter of waiters) waiter(isReady);
  }

  #stopWorker(): void {
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
    const stopping = this.#worker;
    this.#worker = undefined;
    this.#ready = false;
    this.#tellReady(false);
    if (stopping === undefined) return;
    void stopping.terminate();
  }

  /** Jobs the worker holds go back to the queue's front, for this thread to prepare when they are taken. */
  #reclaim(): void {
    const orphans = [...this.#inFlight.values()].sort((left, right) => left.id - right.id);
    this.#inFlight.clear();
    this.#inFlightBytes = 0;
    this.#queue.unshift(...orphans);
    for (const job of orphans) settle(job, { kind: "queued" });
  }

  /** The worker died or could not load: logged once, and this preparer keeps to the main thread. */
  #onWorkerLost(lost: Worker, error: unknown): void {
    if (this.#worker !== lost) return;
    this.#stopWorker();
    this.#broken = true;
    this.#logger.warn(
      { error: describeError(error) },
      "index worker stopped; memory files are prepared on the main thread",
    );
    this.#reclaim();
  }

  /** Sends queued jobs to a ready worker up to {@link WORKER_IN_FLIGHT_BYTES}; refs it only while it works. */
  #pump(): void {
    const worker = this.#worker;
    if (worker === undefined || !this.#ready) return;
    const queue = this.#queue;
    while (queue.length > 0 && (this.#inFlight.size === 0 || this.#inFlightBytes < WORKER_IN_FLIGHT_BYTES)) {
      const job = queue.shift()!;
      if (!this.#cutHere(job) || job.chunks === undefined) continue;
      if (job.chunks.length === 0) {
        settle(job, { kind: "prepared", chunks: [] });
        continue;
      }
      job.state = { kind: "sent" };
      this.#inFlight.set(job.id, job);
      this.#inFlightBytes += job.bytes;
      const request: IndexWorkerRequest = { id: job.id, texts: job.chunks.map(searchableText) };
      worker.postMessage(request);
    }
    if (this.#inFlight.size > 0) {
      // Only while it works for us: an idle worker must not keep the process alive.
      worker.ref();
      if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
      this.#idleTimer = undefined;
    } else {
      worker.unref();
      if (this.#idleTimer === undefined) {
        this.#idleTimer = setTimeout(() => this.#stopWorker(), this.#idleMs);
        this.#idleTimer.unref();
      }
    }
  }

  #onReply(message: IndexWorkerReply): void {
    if (message.kind === "ready") {
      this.#ready = true;
      this.#tellReady(true);
      this.#pump();
      return;
    }
    const job = this.#inFlight.get(message.id);
    if (job === undefined) return;
    this.#inFlight.delete(message.id);
    this.#inFlightBytes -= job.bytes;
    const chunks = job.chunks ?? [];
    if (message.kind === "analysed" && message.analyses.length === chunks.length) {
      this.#preparedInWorker += 1;
      const { analyses } = message;
      settle(job, {
        kind: "prepared",
        chunks: chunks.map((chunk, index) => withWireAnalysis(chunk, analyses[index]!)),
      });
    } else {
      settle(job, { kind: "failed-in-worker" });
    }
    this.#pump();
  }

  #ensureWorker(): void {
    if (this.#worker !== undefined || this.#broken || this.#burstBytes + this.#comingBytes < this.#startBytes)
      return;
    let started: Worker;
    try {
      started = this.#startWorker();
    } catch (error) {
      this.#worker = undefined;
      this.#broken = true;
      this.#logger.warn(
        { error: describeError(error) },
        "index worker did not start; memory files are prepared on the main thread",
      );
      return;
    }
    this.#worker = started;
    started.unref();
    this.#logger.debug({ backlogBytes: this.#backlogBytes }, "index worker started");
    started.on("message", (message: unknown) => {
      if (this.#worker === started && isIndexWorkerReply(message)) this.#onReply(message);
    });
    started.on("error", (error) => this.#onWorkerLost(started, error));
    started.on("exit", (code) =>
      this.#onWorkerLost(
        started,
        new InternalError("index.worker_exited", `index worker exited with code ${code}`),
      ),
    );
  }
}
