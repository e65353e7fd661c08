import { type ChatModel, describeError, type Logger, silentLogger, type TokenCounter } from "@almanac/core";
import {
  assertTimeZone,
  defaultTimeZone,
  type MemoryFileStore,
  type ShrinkGuard,
} from "@almanac/memory-files";
import { systemClock, type TaskClock } from "@almanac/tasks";
import { ConsolidationError } from "./consolidation-error.js";
import type { RunRecord } from "./consolidation-journal.js";
import type { RunSettings } from "./consolidation-run.js";
import { NightlyTrigger, nightlySchedule } from "./nightly-schedule.js";
import { type ConsolidationRunInfo, RunBook, toRunInfo } from "./run-book.js";
import { executeRun, type RunExecutionDeps } from "./run-execution.js";

/** Options of {@link Consolidator}. */
export interface ConsolidatorOptions {
  /** The owner's memory files (the store the server shares: backups, shrink guard, conflict checks). */
  readonly store: MemoryFileStore;
  /** The state directory; the journal is `<stateDir>/consolidation/state.json`. */
  readonly stateDir: string;
  /** The model the consolidation agent uses. */
  readonly model: ChatModel;
  readonly tokenCounter: TokenCounter;
  /** IANA zone of the daily logs and of the nightly time. Default: the server's zone. */
  readonly timeZone?: string;
  /** MEMORY.md's budget in tokens, counted as the memory excerpt counts them. Default 2000. */
  readonly budgetTokens?: number;
  /** Local time of the nightly run, `HH:MM`, or `off`. Default `03:30`. */
  readonly at?: string;
  /** Normalized phrases the owner asked to forget: a line that mentions one is never committed. */
  readonly forgotten?: () => readonly string[];
  /** Time and timers (tests move it by hand). Default: the real clock, timers unref'd. */
  readonly clock?: TaskClock;
  readonly logger?: Logger;
  /** Attempts of a run before it is marked failed. Default 3. */
  readonly maxAttempts?: number;
  /** Delay before attempt `attempt + 1`. Default 1 min doubling, at most 30 min. */
  readonly backoff?: (attempt: number) => number;
  /** Times a run is merged again when a person edited MEMORY.md before its commit. Default 3. */
  readonly maxConflictRetries?: number;
  /** Reasoning steps per pass. Default 24. */
  readonly maxIterations?: number;
  /** Most log tokens per pass. Default 8000 (less when the window is smaller). */
  readonly maxInputTokens?: number;
  /** The model's context window. Default: the model's own, else 128,000. */
  readonly contextWindow?: number;
  /** Output cap of each step, kept free in the window. Default 4,096, at most a quarter of the window. */
  readonly maxOutputTokens?: number;
  /** Finished runs kept in the history. Default 50. */
  readonly keepRuns?: number;
  readonly shrinkGuard?: ShrinkGuard;
  /** Told after a run wrote memory files (the server syncs the index at once). Failures are logged, not fatal. */
  readonly onCommitted?: (changedFiles: readonly string[]) => Promise<void>;
}

/** What `GET /api/memory/consolidation` answers. */
export interface ConsolidationStatus {
  readonly schedule: { readonly at: string | null; readonly timeZone: string };
  /** The next nightly run (ms since the epoch), `null` when the schedule is off. */
  readonly nextRunAt: number | null;
  readonly budgetTokens: number;
  /** The id of the run in progress. */
  readonly running: string | null;
  /** Newest first. */
  readonly runs: readonly ConsolidationRunInfo[];
}

function defaultBackoff(attempt: number): number {
  return Math.min(1_800_000, 60_000 * 2 ** Math.max(0, attempt - 1));
}

/** Resolves true when `promise` settles within `ms`, false otherwise (a real timer: shutdown is wall-clock). */
function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([promise.then(() => true), timeout]).finally(() => clearTimeout(timer));
}

/** Checks that the numeric options are whole numbers in range. */
function checkWhole(values: ReadonlyArray<readonly [string, number, number]>): void {
  for (const [name, value, min] of values) {
    if (!Number.isSafeInteger(value) || value < min) {
      throw new ConsolidationError(
        "consolidation.config_invalid",
        `Consolidator: ${name} must be a whole number of at least ${min} (got ${String(value)}).`,
      );
    }
  }
}

/**
 * Consolidation of the owner's long-term memory: runs, one at a time, that fold what the daily logs say since
 * the last run into MEMORY.md (newest value of a changed fact with its date, duplicates merged, MEMORY.md kept
 * within its budget by moving detail to topic files), nightly and on request. A run's result is committed once,
 * after a commit record is journaled: a crash before it redoes the run, a crash after it finishes the commit,
 * and a person's edit of MEMORY.md meanwhile makes the run merge again on their version, never overwrite it.
 */
export class Consolidator {
  readonly #settings: RunSettings;
  readonly #book: RunBook;
  readonly #execution: RunExecutionDeps;
  readonly #clock: TaskClock;
  readonly #logger: Logger;
  readonly #at: string | undefined;
  readonly #nightly: NightlyTrigger | undefined;
  #phase: "new" | "started" | "stopped" = "new";
  /** The start in progress or done (see `start`). */
  #starting: Promise<void> | undefined;
  #worker: Promise<void> | undefined;
  #again = false;
  #current: { readonly id: string; readonly controller: AbortController } | undefined;
  #retryTimer: unknown;
  #idleWaiters: Array<() => void> = [];

  constructor(options: ConsolidatorOptions) {
    const timeZone = options.timeZone ?? defaultTimeZone();
    assertTimeZone(timeZone);
    const maxAttempts = options.maxAttempts ?? 3;
    const maxConflictRetries = options.maxConflictRetries ?? 3;
    const keepRuns = options.keepRuns ?? 50;
    const budgetTokens = options.budgetTokens ?? 2000;
    checkWhole([
      ["maxAttempts", maxAttempts, 1],
      ["maxConflictRetries", maxConflictRetries, 0],
      ["keepRuns", keepRuns, 0],
      ["budgetTokens", budgetTokens, 1],
    ]);
    const clock = options.clock ?? systemClock;
    this.#clock = clock;
    this.#logger = (options.logger ?? silentLogger).child({ component: "consolidation" });
    this.#at = options.at === undefined ? "03:30" : options.at === "off" ? undefined : options.at;
    const forgotten = options.forgotten ?? (() => []);
    this.#settings = {
      store: options.store,
      model: options.model,
      tokenCounter: options.tokenCounter,
      timeZone,
      budgetTokens,
      forgotten,
      now: () => clock.now(),
      logger: options.logger ?? silentLogger,
      maxIterations: options.maxIterations ?? 24,
      maxInputTokens: options.maxInputTokens ?? 8000,
      contextWindow: options.contextWindow ?? options.model.contextWindow ?? 128_000,
      maxOutputTokens: options.maxOutputTokens ?? 4096,
      ...(options.shrinkGuard === undefined ? {} : { shrinkGuard: options.shrinkGuard }),
    };
    this.#book = new RunBook({
      stateDir: options.stateDir,
      logger: this.#logger,
      now: () => clock.now(),
      forgotten,
      keepRuns,
      ...(options.onCommitted === undefined ? {} : { onCommitted: options.onCommitted }),
    });
    this.#execution = {
      settings: this.#settings,
      book: this.#book,
      logger: this.#logger,
      maxAttempts,
      maxConflictRetries,
      backoff: options.backoff ?? defaultBackoff,
    };
    this.#nightly =
      this.#at === undefined
        ? undefined
        : new NightlyTrigger({
            schedule: nightlySchedule(this.#at, timeZone),
            clock,
            logger: this.#logger,
            lastSlot: () => this.#book.lastSlot(),
            onSlot: async (slot) => {
              await this.#book.setLastSlot(slot);
              await this.request("schedule");
            },
          });
  }

  /**
   * Loads the journal, finishes or requeues what a crash interrupted, catches up on a nightly slot missed while
   * the server was down (one run, not one per night), and starts the schedule. Idempotent: a later call
   * returns the first call's promise, so a caller can wait for the start another began.
   */
  start(): Promise<void> {
    if (this.#phase !== "new") return this.#starting ?? Promise.resolve();
    this.#phase = "started";
    this.#starting = this.#begin();
    return this.#starting;
  }

  async #begin(): Promise<void> {
    await this.#book.load();
    await this.#book.recoverInterrupted(this.#execution.maxAttempts);
    // A fresh workspace has nothing to catch up on: its first run is the next slot.
    if (this.#nightly !== undefined && this.#book.lastSlot() === null)
      await this.#book.setLastSlot(this.#nightly.latestSlot() ?? null);
    if (this.#phase !== "started") return;
    await this.#nightly?.start();
    this.#kick();
  }

  /**
   * Stops the schedule; the run in progress may finish within `deadlineMs` (default 15 000), then it is aborted
   * and stays journaled (with its commit record, if it had one) for the next start.
   */
  async stop(options: { readonly deadlineMs?: number } = {}): Promise<void> {
    if (this.#phase === "stopped") return;
    this.#phase = "stopped";
    // A start still reading or writing the journal finishes first (its failure was reported to its caller).
    await this.#starting?.catch(() => {});
    this.#nightly?.stop();
    if (this.#retryTimer !== undefined) this.#clock.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    const worker = this.#worker;
    if (worker !== undefined && !(await settlesWithin(worker, options.deadlineMs ?? 15_000))) {
      this.#logger.warn(
        { runId: this.#current?.id },
        "consolidation run still going at the deadline; aborting it",
      );
      this.#current?.controller.abort();
      if (!(await settlesWithin(worker, 2_000)))
        this.#logger.error({}, "consolidation run ignored the abort; it runs again on start");
    }
    await this.#book.flush();
    this.#checkIdle();
  }

  /**
   * Asks for a run, journaled before this resolves. A run already waiting is reused (and, asked for by a person,
   * no longer waits for its retry time); a run in progress is followed by a new one, so what was logged since it
   * began is folded in too.
   */
  async request(trigger: RunRecord["trigger"]): Promise<ConsolidationRunInfo> {
    await this.#book.load();
    const waiting = this.#book.pending()[0];
    if (waiting !== undefined) {
      if (trigger === "request" && waiting.nextAttemptAt !== undefined) {
        await this.#book.update(waiting.id, { nextAttemptAt: undefined, updatedAt: this.#clock.now() });
        this.#kick();
      }
      return toRunInfo(this.#book.run(waiting.id) ?? waiting);
    }
    const run = await this.#book.add(trigger);
    this.#logger.info({ runId: run.id, trigger }, "consolidation run requested");
    this.#kick();
    return toRunInfo(run);
  }

  /** The schedule, the next nightly run and the recent runs (newest first) with their outcome and changes. */
  async status(): Promise<ConsolidationStatus> {
    await this.#book.load();
    return {
      schedule: { at: this.#at ?? null, timeZone: this.#settings.timeZone },
      nextRunAt: this.#nightly?.nextRunAt() ?? null,
      budgetTokens: this.#settings.budgetTokens,
      running: this.#current?.id ?? null,
      runs: this.#book.history(),
    };
  }

  /** Resolves once no run is in progress or due (a run waiting for its retry time does not count). */
  whenIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #isIdle(): boolean {
    const now = this.#clock.now();
    return (
      this.#worker === undefined &&
      !this.#book
        .runs()
        .some(
          (run) => run.state === "running" || (run.state === "pending" && (run.nextAttemptAt ?? 0) <= now),
        )
    );
  }

  #checkIdle(): void {
    if (!this.#isIdle() && this.#phase === "started") return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  #kick(): void {
    if (this.#phase !== "started") return;
    if (this.#worker !== undefined) {
      this.#again = true;
      return;
    }
    this.#worker = this.#work()
      .catch((error: unknown) =>
        this.#logger.error({ error: describeError(error) }, "consolidation worker failed"),
      )
      .finally(() => {
        this.#worker = undefined;
        if (this.#again && this.#phase === "started") {
          this.#again = false;
          this.#kick();
        } else this.#checkIdle();
      });
  }

  /** Runs due runs one at a time, oldest first; arms a timer for the next retry when only waiting ones are left. */
  async #work(): Promise<void> {
    for (;;) {
      this.#again = false;
      if (this.#phase !== "started") return;
      const now = this.#clock.now();
      const pending = this.#book.pending();
      const due = pending.find((run) => (run.nextAttemptAt ?? 0) <= now);
      if (due === undefined) {
        const soonest = Math.min(...pending.map((run) => run.nextAttemptAt ?? now));
        if (Number.isFinite(soonest)) this.#armRetry(soonest - now);
        return;
      }
      const controller = new AbortController();
      this.#current = { id: due.id, controller };
      try {
        await executeRun(this.#execution, due, controller.signal);
      } catch (error) {
        // The journal itself could not be written (disk full, permissions): keep the run, try again later.
        const delay = this.#execution.backoff(1);
        this.#logger.error(
          { runId: due.id, error: describeError(error) },
          "consolidation journal not written",
        );
        if (this.#book.run(due.id)?.state === "running")
          this.#book.keepUnwritten(due.id, { state: "pending", nextAttemptAt: now + delay });
        this.#armRetry(delay);
        return;
      } finally {
        this.#current = undefined;
      }
    }
  }

  #armRetry(delayMs: number): void {
    if (this.#retryTimer !== undefined) this.#clock.clearTimeout(this.#retryTimer);
    this.#retryTimer = this.#clock.setTimeout(
      () => {
        this.#retryTimer = undefined;
        this.#kick();
      },
      Math.max(0, delayMs),
    );
  }
}
