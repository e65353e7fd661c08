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
  type JobExecutionDeps,
  type JobExecutionResult,
  toJobError,
} from "./summary-job-execution.js";
import { createSummaryJournal, type SummaryJournal } from "./summary-journal.js";
import { defaultBackoff, defaultSleep, settlesWithin } from "./summary-queue-timing.js";

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

/** Creates the queue. Call `start()` to run jobs; `enqueue` works (journals) before and after. */
export function createSummaryQueue(options: SummaryQueueOptions): SummaryQueue {
  return new DurableSummaryQueue(options);
}

/** {@link SummaryQueue} over the on-disk journal: the jobs' state lives in the files, `#infos` mirrors it. */
class DurableSummaryQueue implements SummaryQueue {
  readonly #stateDir: string;
  readonly #logger: Logger;
  readonly #clock: () => number;
  readonly #maxAttempts: number;
  readonly #keepDone: number;
  readonly #backoff: (attempt: number) => number;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #storageRetryMs: number;
  readonly #journal: SummaryJournal;
  /** What each run needs from the queue; `persist` is the queue's own, so the run updates `#infos`. */
  readonly #execution: JobExecutionDeps;
  readonly #infos = new Map<string, SummaryJobInfo>();
  readonly #stopController = new AbortController();
  #nextSeq = 1;
  #loading: Promise<void> | undefined;
  #phase: "new" | "started" | "stopping" | "stopped" = "new";
  #worker: Promise<void> | undefined;
  #wakeUp: (() => void) | undefined;
  #running: { readonly id: string; readonly controller: AbortController } | undefined;
  #enqueueChain: Promise<unknown> = Promise.resolve();
  #idleWaiters: Array<() => void> = [];

  constructor(options: SummaryQueueOptions) {
    this.#logger = (options.logger ?? silentLogger).child({ component: "summary-queue" });
    this.#clock = options.clock ?? Date.now;
    this.#maxAttempts = options.maxAttempts ?? 3;
    this.#keepDone = options.keepDone ?? 100;
    this.#backoff = options.backoff ?? defaultBackoff;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#storageRetryMs = options.storageRetryMs ?? 5_000;
    this.#stateDir = options.stateDir;
    if (
      !Number.isSafeInteger(this.#maxAttempts) ||
      this.#maxAttempts < 1 ||
      !Number.isSafeInteger(this.#keepDone) ||
      this.#keepDone < 0
    ) {
      throw new UserError(
        "config.invalid",
        "createSummaryQueue: maxAttempts must be ≥ 1 and keepDone ≥ 0 (whole numbers).",
      );
    }
    this.#journal = createSummaryJournal(options.stateDir, this.#logger);
    this.#execution = {
      journal: this.#journal,
      run: options.run,
      persist: (record) => this.#persist(record),
      clock: this.#clock,
      logger: this.#logger,
      maxAttempts: this.#maxAttempts,
      backoff: this.#backoff,
      isRetryable: options.isRetryable ?? defaultIsRetryable,
    };
  }

  async enqueue(input: SummaryJobInput): Promise<SummaryJobInfo> {
    const parsed = inputSchema.safeParse(input);
    if (!parsed.success) {
      throw new UserError("summarizer.invalid_job", `Summary job refused: ${parsed.error.message}`, {
        cause: parsed.error,
      });
    }
    await this.#ready();
    const write = this.#enqueueChain.then(async () => {
      const seq = this.#nextSeq;
      this.#nextSeq += 1;
      const now = this.#clock();
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
      await this.#persist(record);
      this.#logger.debug({ jobId: record.id, messages: record.messageCount }, "summary job journaled");
      this.#wake();
      return toJobInfo(record);
    });
    this.#enqueueChain = write.catch(() => {});
    return write;
  }

  async start(): Promise<void> {
    if (this.#phase !== "new") return;
    this.#phase = "started";
    await this.#ready();
    for (const info of [...this.#infos.values()]) {
      if (info.state === "running") await this.#interrupted(info);
    }
    if (this.#phase !== "started") return;
    this.#worker = this.#loop();
  }

  async stop(options: { readonly deadlineMs?: number } = {}): Promise<void> {
    const deadlineMs = options.deadlineMs ?? 15_000;
    if (this.#phase === "stopped" || this.#phase === "stopping") return;
    const wasStarted = this.#phase === "started";
    this.#phase = "stopping";
    this.#stopController.abort();
    this.#wake();
    const worker = this.#worker;
    if (wasStarted && worker !== undefined && !(await settlesWithin(worker, deadlineMs))) {
      const current = this.#running;
      if (current !== undefined) {
        this.#logger.warn(
          { jobId: current.id, deadlineMs },
          "summary job still running at the deadline; aborting it",
        );
        current.controller.abort(
          new SummarizerError("summarizer.stopped", "The summary queue is shutting down."),
        );
      }
      if (!(await settlesWithin(worker, 2_000))) {
        this.#logger.error({}, "summary job ignored the abort; it stays journaled and runs again on start");
      }
    }
    this.#phase = "stopped";
  }

  async retry(jobId: string): Promise<SummaryJobInfo> {
    await this.#ready();
    const info = this.#infos.get(jobId);
    if (info === undefined) throw new UserError("summarizer.job_not_found", `No summary job "${jobId}".`);
    if (info.state !== "parked") {
      throw new UserError(
        "summarizer.job_not_parked",
        `Summary job "${jobId}" is ${info.state}; only parked jobs can be retried.`,
      );
    }
    const record = await this.#journal.read(jobId);
    const next: JournalRecord = {
      ...record,
      state: "pending",
      attempts: 0,
      nextAttemptAt: undefined,
      updatedAt: this.#clock(),
    };
    await this.#persist(next);
    this.#logger.info({ jobId }, "parked summary job queued again");
    this.#wake();
    return toJobInfo(next);
  }

  async list(): Promise<SummaryJobInfo[]> {
    await this.#ready();
    return [...this.#infos.values()].sort((a, b) => a.seq - b.seq);
  }

  async stats(): Promise<SummaryQueueStats> {
    await this.#ready();
    const counts = { pending: 0, running: 0, parked: 0, done: 0 };
    for (const info of this.#infos.values()) counts[info.state] += 1;
    return counts;
  }

  async idle(): Promise<void> {
    await this.#ready();
    if (this.#isIdle()) return;
    await new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Loads the journal once; every public method waits for it. */
  #ready(): Promise<void> {
    this.#loading ??= (async () => {
      await this.#journal.init();
      for (const record of await this.#journal.loadAll()) {
        this.#infos.set(record.id, toJobInfo(record));
        this.#nextSeq = Math.max(this.#nextSeq, record.seq + 1);
      }
    })();
    return this.#loading;
  }

  #isIdle(): boolean {
    return ![...this.#infos.values()].some((info) => info.state === "pending" || info.state === "running");
  }

  #checkIdle(): void {
    if (!this.#isIdle()) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #wake(): void {
    const resolve = this.#wakeUp;
    this.#wakeUp = undefined;
    resolve?.();
  }

  async #persist(record: JournalRecord): Promise<void> {
    await this.#journal.write(record);
    this.#infos.set(record.id, toJobInfo(record));
    this.#checkIdle();
  }

  async #pruneDone(): Promise<void> {
    const done = [...this.#infos.values()]
      .filter((info) => info.state === "done")
      .sort((a, b) => a.seq - b.seq);
    for (const info of done.slice(0, Math.max(0, done.length - this.#keepDone))) {
      this.#infos.delete(info.id);
      await this.#journal.remove(info.id);
    }
  }

  async #runJob(info: SummaryJobInfo): Promise<void> {
    let record: JournalRecord;
    try {
      record = await this.#journal.read(info.id);
    } catch (error) {
      this.#logger.error(
        { jobId: info.id, error: describeError(error) },
        "job journal unreadable; job parked",
      );
      const lastError = toJobError(error, false, this.#clock());
      this.#infos.set(info.id, { ...info, state: "parked", lastError, updatedAt: this.#clock() });
      return;
    }
    const controller = new AbortController();
    this.#running = { id: info.id, controller };
    let result: JobExecutionResult;
    try {
      result = await executeSummaryJob(this.#execution, record, controller.signal);
    } catch (error) {
      if (storageErrnoOf(error) === undefined) throw error;
      // The journal could not be written either: the file still says what it said before this run, and so
      // must the queue (not "running", which nothing would ever pick up again).
      this.#infos.set(info.id, { ...toJobInfo(record), updatedAt: this.#clock() });
      this.#logger.warn(
        { jobId: info.id, error: describeError(error) },
        "summary journal cannot be written: disk full",
      );
      result = { kind: "storage-full" };
    } finally {
      this.#running = undefined;
    }
    if (result.kind === "storage-full") await this.#waitUntilWritable();
    if (result.kind === "done") await this.#pruneDone();
    // Head of line: later jobs wait, so entries reach each daily log in order.
    if (result.kind === "retry") await this.#sleep(result.delayMs, this.#stopController.signal);
  }

  /** Sleeps until a small durable write to the state directory works again (or the queue stops). */
  async #waitUntilWritable(): Promise<void> {
    while (this.#phase === "started") {
      await this.#sleep(this.#storageRetryMs, this.#stopController.signal);
      if (this.#phase !== "started") return;
      try {
        if (await probeWritable(this.#stateDir)) return;
      } catch (error) {
        this.#logger.error(
          { error: describeError(error) },
          "cannot probe the state directory; trying the job again",
        );
        return;
      }
    }
  }

  async #loop(): Promise<void> {
    while (this.#phase === "started") {
      const next = [...this.#infos.values()]
        .filter((info) => info.state === "pending")
        .sort((a, b) => a.seq - b.seq)[0];
      if (next === undefined) {
        this.#checkIdle();
        await new Promise<void>((resolve) => {
          this.#wakeUp = resolve;
        });
        continue;
      }
      try {
        await this.#runJob(next);
      } catch (error) {
        // The journal itself failed (disk full, permissions): keep the job, wait, try again.
        this.#logger.error(
          { jobId: next.id, error: describeError(error) },
          "summary queue could not update its journal",
        );
        await this.#sleep(this.#backoff(1), this.#stopController.signal);
      }
    }
  }

  async #interrupted(info: SummaryJobInfo): Promise<void> {
    const record = await this.#journal.read(info.id);
    const lastError: JobError = {
      code: "summarizer.interrupted",
      message: `The server stopped while this job was running (run ${record.attempts} of ${this.#maxAttempts}).`,
      retryable: true,
      at: this.#clock(),
    };
    const state = record.attempts >= this.#maxAttempts ? "parked" : "pending";
    await this.#persist({ ...record, state, lastError, updatedAt: this.#clock() });
    this.#logger.warn({ jobId: info.id, state }, "summary job was interrupted by a stop or crash");
  }
}
