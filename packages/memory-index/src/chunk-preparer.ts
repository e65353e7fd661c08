import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
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
 * The worker's file: this TypeScript source's neighbour, which the server build rewrites to its bundled entry
 * (`memory-index-worker.js` beside the other chunks; apps/server/scripts/build.mjs).
 */
const workerFile = new URL("./index-worker.ts", import.meta.url);
const fromSources = workerFile.pathname.endsWith(".ts");

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

/** Starts the index worker from the build, or from the TypeScript sources through tsx's CommonJS loader. */
function startIndexWorker(): Worker {
  if (!fromSources) return new Worker(workerFile);
  // Under tsx or vitest a worker does not get tsx's hooks (on Node 20, `--import tsx` registers them in the
  // main thread only), so it registers tsx itself before loading the source: tsx's CommonJS `register()`,
  // which compiles in the worker's own thread (~5 ms, its API ~15 ms to load). The ESM one starts a hooks
  // thread of its own and sends every import through it: ~85 ms to load, ~140-175 ms to register, and the
  // worker was ready only after 0.5-0.8 s (now ~0.15-0.25 s). The modules the worker loads are therefore
  // compiled to CommonJS there: no top-level await in them (chunk-preparer.test.ts runs this worker).
  const tsxApi = createRequire(import.meta.url).resolve("tsx/cjs/api");
  const bootstrap = `require(${JSON.stringify(tsxApi)}).register(); require(${JSON.stringify(fileURLToPath(workerFile))});`;
  return new Worker(bootstrap, { eval: true });
}

/**
 * How often a take that keeps this thread busy (preparing while the worker starts, or taking queued files
 * while it works) lets the worker's messages in: a sync otherwise runs in microtasks and never sees them, and a
 * turn of the event loop per file cost the year corpus's sync (366 files, ~0.25 s) 40-80 ms.
 */
const YIELD_EVERY_MS = 3;

/** Resolves after the event loop's next turn, once messages already received have been handled. */
const yieldToMessages = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Creates a preparer; the worker starts on the first large enough backlog. */
export function createChunkPreparer(options: ChunkPreparerOptions): ChunkPreparer {
  const { chunking, logger } = options;
  const idleMs = options.idleMs ?? 10_000;
  const startWorker = options.startWorker ?? startIndexWorker;
  const queue: Job[] = [];
  const inFlight = new Map<number, Job>();
  let inFlightBytes = 0;
  const startBytes = options.workerStartBytes ?? workerStartBytes;
  /** Bytes submitted and not yet taken. */
  let backlogBytes = 0;
  /** Bytes submitted since the preparer was last idle (nothing submitted and untaken). */
  let burstBytes = 0;
  /** What the last submit said would follow it. */
  let comingBytes = 0;
  let nextId = 0;
  let worker: Worker | undefined;
  let ready = false;
  let broken = false;
  let idleTimer: NodeJS.Timeout | undefined;

  let lastYield = performance.now();
  /** Lets the worker's messages in if this thread has been busy for {@link YIELD_EVERY_MS}. */
  const yieldNowAndThen = async (): Promise<void> => {
    if (performance.now() - lastYield < YIELD_EVERY_MS) return;
    await yieldToMessages();
    lastYield = performance.now();
  };
  let preparedHere = 0;
  let preparedInWorker = 0;
  let readyWaiters: ((ready: boolean) => void)[] = [];

  const prepareHere = (job: Job): void => {
    preparedHere += 1;
    try {
      const chunks =
        job.chunks === undefined
          ? prepareIndexChunks(job.relative, job.content, chunking)
          : job.chunks.map(analyzedChunk);
      job.state = { kind: "prepared", chunks };
    } catch (error) {
      job.state = { kind: "thrown", error };
    }
  };

  const settle = (job: Job, state: JobState): void => {
    job.state = state;
    const { wake } = job;
    job.wake = undefined;
    wake?.();
  };

  /**
   * This thread's half of a job: counting tokens and cutting the file into chunks (a file that cannot be cut
   * throws here, as it always has: the job settles with the error). False when it threw.
   */
  const cutHere = (job: Job): boolean => {
    if (job.chunks !== undefined) return true;
    try {
      job.chunks = chunkIndexFile(job.relative, job.content, chunking);
      return true;
    } catch (error) {
      const at = queue.indexOf(job);
      if (at >= 0) queue.splice(at, 1);
      settle(job, { kind: "thrown", error });
      return false;
    }
  };

  const tellReady = (isReady: boolean): void => {
    const waiters = readyWaiters;
    readyWaiters = [];
    for (const waiter of waiters) waiter(isReady);
  };

  const stopWorker = (): void => {
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    idleTimer = undefined;
    const stopping = worker;
    worker = undefined;
    ready = false;
    tellReady(false);
    if (stopping === undefined) return;
    void stopping.terminate();
  };

  /** Jobs the worker holds go back to the queue's front, for this thread to prepare when they are taken. */
  const reclaim = (): void => {
    const orphans = [...inFlight.values()].sort((left, right) => left.id - right.id);
    inFlight.clear();
    inFlightBytes = 0;
    queue.unshift(...orphans);
    for (const job of orphans) settle(job, { kind: "queued" });
  };

  /** The worker died or could not load: logged once, and this preparer keeps to the main thread. */
  const onWorkerLost = (lost: Worker, error: unknown): void => {
    if (worker !== lost) return;
    stopWorker();
    broken = true;
    logger.warn(
      { error: describeError(error) },
      "index worker stopped; memory files are prepared on the main thread",
    );
    reclaim();
  };

  const pump = (): void => {
    if (worker === undefined || !ready) return;
    while (queue.length > 0 && (inFlight.size === 0 || inFlightBytes < WORKER_IN_FLIGHT_BYTES)) {
      const job = queue.shift()!;
      if (!cutHere(job) || job.chunks === undefined) continue;
      if (job.chunks.length === 0) {
        settle(job, { kind: "prepared", chunks: [] });
        continue;
      }
      job.state = { kind: "sent" };
      inFlight.set(job.id, job);
      inFlightBytes += job.bytes;
      const request: IndexWorkerRequest = { id: job.id, texts: job.chunks.map(searchableText) };
      worker.postMessage(request);
    }
    if (inFlight.size > 0) {
      // Only while it works for us: an idle worker must not keep the process alive.
      worker.ref();
      if (idleTimer !== undefined) clearTimeout(idleTimer);
      idleTimer = undefined;
    } else {
      worker.unref();
      if (idleTimer === undefined) {
        idleTimer = setTimeout(stopWorker, idleMs);
        idleTimer.unref();
      }
    }
  };

  const onReply = (message: IndexWorkerReply): void => {
    if (message.kind === "ready") {
      ready = true;
      tellReady(true);
      pump();
      return;
    }
    const job = inFlight.get(message.id);
    if (job === undefined) return;
    inFlight.delete(message.id);
    inFlightBytes -= job.bytes;
    const chunks = job.chunks ?? [];
    if (message.kind === "analysed" && message.analyses.length === chunks.length) {
      preparedInWorker += 1;
      const { analyses } = message;
      settle(job, {
        kind: "prepared",
        chunks: chunks.map((chunk, index) => withWireAnalysis(chunk, analyses[index]!)),
      });
    } else {
      settle(job, { kind: "failed-in-worker" });
    }
    pump();
  };

  const ensureWorker = (): void => {
    if (worker !== undefined || broken || burstBytes + comingBytes < startBytes) return;
    let started: Worker;
    try {
      started = startWorker();
    } catch (error) {
      worker = undefined;
      broken = true;
      logger.warn(
        { error: describeError(error) },
        "index worker did not start; memory files are prepared on the main thread",
      );
      return;
    }
    worker = started;
    started.unref();
    logger.debug({ backlogBytes }, "index worker started");
    started.on("message", (message: unknown) => {
      if (worker === started && isIndexWorkerReply(message)) onReply(message);
    });
    started.on("error", (error) => onWorkerLost(started, error));
    started.on("exit", (code) =>
      onWorkerLost(
        started,
        new InternalError("index.worker_exited", `index worker exited with code ${code}`),
      ),
    );
  };

  return {
    submit(relative, content, coming = 0) {
      const job: Job = {
        id: nextId++,
        relative,
        content,
        bytes: content.byteLength,
        chunks: undefined,
        state: { kind: "queued" },
        wake: undefined,
      };
      queue.push(job);
      if (backlogBytes === 0) burstBytes = 0;
      backlogBytes += job.bytes;
      burstBytes += job.bytes;
      comingBytes = coming;
      ensureWorker();
      pump();
      return job;
    },

    async take(handle) {
      const job = handle as Job;
      try {
        for (;;) {
          const { state } = job;
          if (state.kind === "prepared") return state.chunks;
          if (state.kind === "thrown") throw state.error;
          if (state.kind === "queued" && worker !== undefined && !ready) {
            // While the worker starts, this thread cuts the queued files in order (its half of the work either
            // way), and analyses this one itself only once all are cut: analysing here too made it warm up
            // the analysis (JIT, the segmenter) as well, a slow start for the first files.
            const uncut = queue.find((queued) => queued.chunks === undefined);
            if (uncut !== undefined) cutHere(uncut);
            await yieldNowAndThen(); // its "ready"
            if (job.state.kind !== "queued" || uncut !== undefined) continue;
          }
          if (job.state.kind === "queued" || job.state.kind === "failed-in-worker") {
            const at = queue.indexOf(job);
            if (at >= 0) queue.splice(at, 1);
            prepareHere(job);
            continue;
          }
          // Sent and not back yet: prepare a queued file meanwhile (the last, which is needed last).
          const stolen = queue.pop();
          if (stolen !== undefined) {
            prepareHere(stolen);
            await yieldNowAndThen();
            continue;
          }
          await new Promise<void>((resolve) => {
            job.wake = resolve;
          });
          lastYield = performance.now();
        }
      } finally {
        backlogBytes -= job.bytes;
      }
    },

    discard(handle) {
      const job = handle as Job;
      const at = queue.indexOf(job);
      if (at >= 0) queue.splice(at, 1);
      backlogBytes -= job.bytes;
    },

    stats: () => ({ preparedHere, preparedInWorker }),

    whenWorkerReady() {
      if (ready) return Promise.resolve(true);
      if (worker === undefined) return Promise.resolve(false);
      return new Promise((resolve) => readyWaiters.push(resolve));
    },

    async close() {
      stopWorker();
      reclaim();
    },
  };
}
