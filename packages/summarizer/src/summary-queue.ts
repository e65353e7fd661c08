import { randomBytes } from "node:crypto";
import { describeError, type Logger, messageSchema, silentLogger, UserError } from "@almanac/core";
import { z } from "zod";
import { probeWritable, storageErrnoOf } from "./storage-errno.js";
import { SummarizerError } from "./summarizer-error.js";
import {
  type JobError,
  type JournalRecord,
  type SummaryJobInfo,
  type SummaryJobInput,
  type SummaryJobRunner,
  toJobInfo,
} from "./summary-job.js";
import {
  defaultIsRetryable,
  executeSummaryJob,
  type JobExecutionResult,
  toJobError,
} from "./summary-job-execution.js";
import { createSummaryJournal } from "./summary-journal.js";

/** Options of {@link createSummaryQueue}. */
export interface SummaryQueueOptions {
  /** The state directory; the journal lives in `<stateDir>/summarizer/jobs/`. */
  readonly stateDir: string;
  readonly run: SummaryJobRunner;
  readonly logger?: Logger;
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly clock?: () => number;
  /** Runs per job before it is parked. Default 3. */
  readonly maxAttempts?: number;
  /** Delay before run `attempt + 1` after failed run `attempt`. Default 2 s doubling, at most 5 min. */
  readonly backoff?: (attempt: number) => number;
  /** Waits `ms` unless `signal` fires first. Default: a timer. */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Finished jobs kept in the history (and on disk). Default 100. */
  readonly keepDone?: number;
  /** Whether a failure is worth another run. Default: the error's own `isRetryable` flag. */
  readonly isRetryable?: (error: unknown) => boolean;
  /**
   * While the disk is full (or read-only), how often to check whether writes work again before the next run
   * (no attempt is counted and no model time spent meanwhile). Default 5 000 ms.
   */
  readonly storageRetryMs?: number;
}

/** Job counts by state. */
export interface SummaryQueueStats {
  readonly pending: number;
  readonly running: number;
  readonly parked: number;
  readonly done: number;
}

/** The durable summarizer queue: one worker, jobs in enqueue order, nothing dropped. */
export interface SummaryQueue {
  /** Journals the job durably, then resolves (so the caller may commit); the worker runs it later. */
  enqueue(input: SummaryJobInput): Promise<SummaryJobInfo>;
  /** Loads the journal, requeues jobs interrupted by a crash, and starts the worker. Idempotent. */
  start(): Promise<void>;
  /**
   * Stops the worker: the running job may finish within `deadlineMs` (default 15 000), then it is
   * aborted and stays journaled, as do pending jobs. Jobs enqueued afterwards are journaled only.
   */
  stop(options?: { readonly deadlineMs?: number }): Promise<void>;
  /** Queues a parked job again with fresh attempts (`summarizer.job_not_found` / `summarizer.job_not_parked`). */
  retry(jobId: string): Promise<SummaryJobInfo>;
  /** Every known job (pending, running, parked, and the recent done history), by sequence. */
  list(): Promise<SummaryJobInfo[]>;
  stats(): Promise<SummaryQueueStats>;
  /** Resolves once no job is pending or running (parked jobs do not count). */
  idle(): Promise<void>;
}

const inputSchema = z.object({
  sessionKey: z.string().min(1),
  reason: z.enum(["auto", "command", "overflow", "new-session"]),
  messages: z.array(messageSchema),
  summary: z.string().optional(),
  createdAt: z.number().finite(),
});

function defaultBackoff(attempt: number): number {
  return Math.min(300_000, 2_000 * 2 ** Math.max(0, attempt - 1));
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Resolves true when `promise` settles within `ms`, false otherwise (a real timer: shutdown is wall-clock). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    timeout,
  ]).finally(() => clearTimeout(timer));
}

/** Creates the queue. Call `start()` to run jobs; `enqueue` works (journals) before and after. */
export function createSummaryQueue(options: SummaryQueueOptions): SummaryQueue {
  const logger = (options.logger ?? silentLogger).child({ component: "summary-queue" });
  const clock = options.clock ?? Date.now;
  const maxAttempts = options.maxAttempts ?? 3;
  const keepDone = options.keepDone ?? 100;
  const backoff = options.backoff ?? defaultBackoff;
  const sleep = options.sleep ?? defaultSleep;
  const isRetryable = options.isRetryable ?? defaultIsRetryable;
  const storageRetryMs = options.storageRetryMs ?? 5_000;
  const { run } = options;
  if (
    !Number.isSafeInteger(maxAttempts) ||
    maxAttempts < 1 ||
    !Number.isSafeInteger(keepDone) ||
    keepDone < 0
  ) {
    throw new UserError(
      "config.invalid",
      "createSummaryQueue: maxAttempts must be ≥ 1 and keepDone ≥ 0 (whole numbers).",
    );
  }
  const journal = createSummaryJournal(options.stateDir, logger);
  const infos = new Map<string, SummaryJobInfo>();
  const stopController = new AbortController();
  let nextSeq = 1;
  let loading: Promise<void> | undefined;
  let phase: "new" | "started" | "stopping" | "stopped" = "new";
  let worker: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let running: { readonly id: string; readonly controller: AbortController } | undefined;
  let enqueueChain: Promise<unknown> = Promise.resolve();
  let idleWaiters: Array<() => void> = [];

  const ready = () => {
    loading ??= (async () => {
      await journal.init();
      for (const record of await journal.loadAll()) {
        infos.set(record.id, toJobInfo(record));
        nextSeq = Math.max(nextSeq, record.seq + 1);
      }
    })();
    return loading;
  };

  const isIdle = () =>
    ![...infos.values()].some((info) => info.state === "pending" || info.state === "running");

  const checkIdle = () => {
    if (!isIdle()) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  };

  const wake = () => {
    const resolve = wakeUp;
    wakeUp = undefined;
    resolve?.();
  };

  const persist = async (record: JournalRecord) => {
    await journal.write(record);
    infos.set(record.id, toJobInfo(record));
    checkIdle();
  };

  const pruneDone = async () => {
    const done = [...infos.values()].filter((info) => info.state === "done").sort((a, b) => a.seq - b.seq);
    for (const info of done.slice(0, Math.max(0, done.length - keepDone))) {
      infos.delete(info.id);
      await journal.remove(info.id);
    }
  };

  const runJob = async (info: SummaryJobInfo) => {
    let record: JournalRecord;
    try {
      record = await journal.read(info.id);
    } catch (error) {
      logger.error({ jobId: info.id, error: describeError(error) }, "job journal unreadable; job parked");
      const lastError = toJobError(error, false, clock());
      infos.set(info.id, { ...info, state: "parked", lastError, updatedAt: clock() });
      return;
    }
    const controller = new AbortController();
    running = { id: info.id, controller };
    let result: JobExecutionResult;
    try {
      result = await executeSummaryJob(
        { journal, run, persist, clock, logger, maxAttempts, backoff, isRetryable },
        record,
        controller.signal,
      );
    } catch (error) {
      if (storageErrnoOf(error) === undefined) throw error;
      // The journal could not be written either: the file still says what it said before this run, and so
      // must the queue (not "running", which nothing would ever pick up again).
      infos.set(info.id, { ...toJobInfo(record), updatedAt: clock() });
      logger.warn(
        { jobId: info.id, error: describeError(error) },
        "summary journal cannot be written: disk full",
      );
      result = { kind: "storage-full" };
    } finally {
      running = undefined;
    }
    if (result.kind === "storage-full") await waitUntilWritable();
    if (result.kind === "done") await pruneDone();
    // Head of line: later jobs wait, so entries reach each daily log in order.
    if (result.kind === "retry") await sleep(result.delayMs, stopController.signal);
  };

  /** Sleeps until a small durable write to the state directory works again (or the queue stops). */
  const waitUntilWritable = async () => {
    while (phase === "started") {
      await sleep(storageRetryMs, stopController.signal);
      if (phase !== "started") return;
      try {
        if (await probeWritable(options.stateDir)) return;
      } catch (error) {
        logger.error(
          { error: describeError(error) },
          "cannot probe the state directory; trying the job again",
        );
        return;
      }
    }
  };

  const loop = async () => {
    while (phase === "started") {
      const next = [...infos.values()]
        .filter((info) => info.state === "pending")
        .sort((a, b) => a.seq - b.seq)[0];
      if (next === undefined) {
        checkIdle();
        await new Promise<void>((resolve) => {
          wakeUp = resolve;
        });
        continue;
      }
      try {
        await runJob(next);
      } catch (error) {
        // The journal itself failed (disk full, permissions): keep the job, wait, try again.
        logger.error(
          { jobId: next.id, error: describeError(error) },
          "summary queue could not update its journal",
        );
        await sleep(backoff(1), stopController.signal);
      }
    }
  };

  const interrupted = async (info: SummaryJobInfo) => {
    const record = await journal.read(info.id);
    const lastError: JobError = {
      code: "summarizer.interrupted",
      message: `The server stopped while this job was running (run ${record.attempts} of ${maxAttempts}).`,
      retryable: true,
      at: clock(),
    };
    const state = record.attempts >= maxAttempts ? "parked" : "pending";
    await persist({ ...record, state, lastError, updatedAt: clock() });
    logger.warn({ jobId: info.id, state }, "summary job was interrupted by a stop or crash");
  };

  return {
    async enqueue(input) {
      const parsed = inputSchema.safeParse(input);
      if (!parsed.success) {
        throw new UserError("summarizer.invalid_job", `Summary job refused: ${parsed.error.message}`, {
          cause: parsed.error,
        });
      }
      await ready();
      const write = enqueueChain.then(async () => {
        const seq = nextSeq;
        nextSeq += 1;
        const now = clock();
        const record: JournalRecord = {
          version: 1,
          id: `${String(seq).padStart(12, "0")}-${randomBytes(4).toString("hex")}`,
          seq,
          sessionKey: parsed.data.sessionKey,
          reason: parsed.data.reason,
          state: "pending",
          attempts: 0,
          messageCount: parsed.data.messages.length,
          createdAt: parsed.data.createdAt,
          enqueuedAt: now,
          updatedAt: now,
          messages: parsed.data.messages,
          ...(parsed.data.summary === undefined ? {} : { summary: parsed.data.summary }),
        };
        await persist(record);
        logger.debug({ jobId: record.id, messages: record.messageCount }, "summary job journaled");
        wake();
        return toJobInfo(record);
      });
      enqueueChain = write.catch(() => {});
      return write;
    },

    async start() {
      if (phase !== "new") return;
      phase = "started";
      await ready();
      for (const info of [...infos.values()]) {
        if (info.state === "running") await interrupted(info);
      }
      if (phase !== "started") return;
      worker = loop();
    },

    async stop(stopOptions = {}) {
      const deadlineMs = stopOptions.deadlineMs ?? 15_000;
      if (phase === "stopped" || phase === "stopping") return;
      const wasStarted = phase === "started";
      phase = "stopping";
      stopController.abort();
      wake();
      if (wasStarted && worker !== undefined && !(await settlesWithin(worker, deadlineMs))) {
        const current = running;
        if (current !== undefined) {
          logger.warn(
            { jobId: current.id, deadlineMs },
            "summary job still running at the deadline; aborting it",
          );
          current.controller.abort(
            new SummarizerError("summarizer.stopped", "The summary queue is shutting down."),
          );
        }
        if (!(await settlesWithin(worker, 2_000))) {
          logger.error({}, "summary job ignored the abort; it stays journaled and runs again on start");
        }
      }
      phase = "stopped";
    },

    async retry(jobId) {
      await ready();
      const info = infos.get(jobId);
      if (info === undefined) throw new UserError("summarizer.job_not_found", `No summary job "${jobId}".`);
      if (info.state !== "parked") {
        throw new UserError(
          "summarizer.job_not_parked",
          `Summary job "${jobId}" is ${info.state}; only parked jobs can be retried.`,
        );
      }
      const record = await journal.read(jobId);
      const next: JournalRecord = {
        ...record,
        state: "pending",
        attempts: 0,
        nextAttemptAt: undefined,
        updatedAt: clock(),
      };
      await persist(next);
      logger.info({ jobId }, "parked summary job queued again");
      wake();
      return toJobInfo(next);
    },

    async list() {
      await ready();
      return [...infos.values()].sort((a, b) => a.seq - b.seq);
    },

    async stats() {
      await ready();
      const counts = { pending: 0, running: 0, parked: 0, done: 0 };
      for (const info of infos.values()) counts[info.state] += 1;
      return counts;
    },

    async idle() {
      await ready();
      if (isIdle()) return;
      await new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}
