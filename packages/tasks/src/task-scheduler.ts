import { randomInt } from "node:crypto";
import { describeError, type Logger, silentLogger } from "@almanac/core";
import { describeSchedule, formatLocal, nextFireAfter, type Schedule } from "./schedule.js";
import { isFinished, type JournalLine, type JournalState, TaskJournal } from "./task-journal.js";
import type { FiringRecord, TaskEvent, TaskRecord } from "./task-types.js";

/** Time as the scheduler sees it: injected, so tests move it by hand. */
export interface TaskClock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** The real clock (timers unref'd: a scheduled task never keeps the process alive by itself). */
export const systemClock: TaskClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** What a firing needs from the server. */
export interface TaskRunner {
  /** Runs the task's turn in its conversation and returns the reply (the turn is in the transcript already). */
  runTurn(task: TaskRecord, firing: FiringRecord): Promise<string>;
  /**
   * Delivers `text` to the task's conversation. `idempotencyKey` is the firing's id: a platform that deduplicates
   * by it makes a repeated send harmless.
   */
  deliver(task: TaskRecord, firing: FiringRecord, text: string): Promise<void>;
  /**
   * True when a send to this conversation that began at `since` may be repeated now: the platform deduplicates
   * by the key, and still does after that long.
   */
  canRepeatSend(sessionKey: string, since: number): boolean;
}

/** Options of {@link TaskScheduler}. */
export interface TaskSchedulerOptions {
  /** The journal file (`<home>/state/tasks/journal.jsonl`). */
  readonly file: string;
  readonly runner: TaskRunner;
  readonly clock?: TaskClock;
  readonly logger?: Logger;
  /**
   * How late a firing may still run (the server was down, or asleep): within it, a missed firing runs once,
   * saying it is late; beyond it, it is reported as missed and not run. Default 1 hour.
   */
  readonly graceMs?: number;
  /** Firings run at once (each is a turn of the model). Default 4. */
  readonly maxConcurrent?: number;
  /** Tries of a turn or a send before the firing fails. Default 5. */
  readonly maxAttempts?: number;
  /** First wait before a retry, doubled each time up to 10 minutes. Default 10 s. */
  readonly retryBaseMs?: number;
  /** True for a reply that says nothing is to be delivered (the heartbeat's silent answer). */
  readonly isSilent?: (text: string, task: TaskRecord) => boolean;
  readonly onEvent?: (event: TaskEvent) => void;
}

/** A task to create. */
export interface NewTask {
  readonly sessionKey: string;
  readonly instruction: string;
  readonly title?: string;
  readonly schedule: Schedule;
  readonly timeZone: string;
  readonly createdBy: string;
  readonly kind?: TaskRecord["kind"];
  /** Replaces the task with this id (the heartbeat is kept under a fixed id). */
  readonly id?: string;
}

/** A firing later than this after its time is marked late (it says so when it speaks). */
const LATE_AFTER_MS = 60_000;
/** The longest sleep between checks: a clock that jumped (a suspended machine) is noticed within a minute. */
const MAX_SLEEP_MS = 60_000;
const ID_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/**
 * The durable schedule. Every firing is claimed in the journal before its turn runs (with the task's next time,
 * in the same write), its reply is recorded before it is sent, and the send is recorded before and after, so a
 * process killed at any moment neither loses nor repeats a delivery: on restart a claimed firing runs its turn,
 * an answered one is sent, and one killed during its send is sent again where the platform deduplicates (by the
 * firing's id) or reported `uncertain` where it cannot. Firings missed while the server was down run once, late,
 * within the grace, and are reported as missed beyond it; a recurring task fires at most once for the time it
 * missed. Failed turns and sends are retried with backoff and end `failed`, never reported as delivered.
 */
export class TaskScheduler {
  readonly #options: TaskSchedulerOptions;
  readonly #journal: TaskJournal;
  readonly #clock: TaskClock;
  readonly #logger: Logger;
  readonly #graceMs: number;
  readonly #maxConcurrent: number;
  readonly #maxAttempts: number;
  readonly #retryBaseMs: number;
  #state: JournalState = { tasks: new Map(), firings: new Map() };
  /** The journal being read ahead of `start` (see `load`). */
  #loading: Promise<JournalState> | undefined;
  #timer: unknown;
  #running = 0;
  /** Firings waiting for a free slot, in order. */
  readonly #waiting: string[] = [];
  /** Firings being worked on (never twice at once). */
  readonly #active = new Set<string>();
  #stopped = true;
  #ticking: Promise<void> | undefined;
  readonly #idle = new Set<() => void>();

  constructor(options: TaskSchedulerOptions) {
    this.#options = options;
    this.#journal = new TaskJournal(options.file, options.logger ?? silentLogger);
    this.#clock = options.clock ?? systemClock;
    this.#logger = (options.logger ?? silentLogger).child({ component: "tasks" });
    this.#graceMs = options.graceMs ?? 3_600_000;
    this.#maxConcurrent = options.maxConcurrent ?? 4;
    this.#maxAttempts = options.maxAttempts ?? 5;
    this.#retryBaseMs = options.retryBaseMs ?? 10_000;
  }

  /**
   * Begins reading the journal, so that `start` finds it read: the server calls this while its other parts start,
   * before the disk gets busy with the memory index. An error reading it is thrown by `start`.
   */
  load(): void {
    this.#loading ??= this.#journal.open();
    // Not lost: `start` awaits the same promise.
    this.#loading.catch(() => {});
  }

  /** Reads the journal, resumes what a previous run left unfinished, catches up on what it missed, starts ticking. */
  async start(): Promise<void> {
    const loading = this.#loading ?? this.#journal.open();
    this.#loading = undefined;
    this.#state = await loading;
    this.#stopped = false;
    const unfinished = [...this.#state.firings.values()].filter((firing) => !isFinished(firing));
    if (unfinished.length > 0)
      this.#logger.info({ firings: unfinished.length }, "resuming firings the previous run left unfinished");
    for (const firing of unfinished) this.#enqueue(firing.id);
    await this.tick();
  }

  /** Stops ticking; firings in flight finish (their turns have their own deadline). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiting.length = 0;
    await this.#ticking;
    await this.#journal.flush();
  }

  /** Resolves once no firing is running or waiting (tests, and `runNow` callers that want the outcome). */
  whenIdle(): Promise<void> {
    if (this.#running === 0 && this.#waiting.length === 0 && this.#ticking === undefined)
      return Promise.resolve();
    return new Promise((resolve) => this.#idle.add(resolve));
  }

  tasks(filter: { readonly sessionKey?: string } = {}): TaskRecord[] {
    return [...this.#state.tasks.values()]
      .filter((task) => filter.sessionKey === undefined || task.sessionKey === filter.sessionKey)
      .sort(
        (a, b) => (a.nextFireAt ?? Number.POSITIVE_INFINITY) - (b.nextFireAt ?? Number.POSITIVE_INFINITY),
      );
  }

  task(id: string): TaskRecord | undefined {
    return this.#state.tasks.get(id.trim().toUpperCase()) ?? this.#state.tasks.get(id.trim());
  }

  /** Firings, newest first: of one task, or all. */
  firings(filter: { readonly taskId?: string; readonly limit?: number } = {}): FiringRecord[] {
    return [...this.#state.firings.values()]
      .filter((firing) => filter.taskId === undefined || firing.taskId === filter.taskId)
      .sort((a, b) => b.claimedAt - a.claimedAt)
      .slice(0, filter.limit ?? 100);
  }

  /** Creates (or, with `id`, replaces) a task; durable when this resolves. */
  async create(input: NewTask): Promise<TaskRecord> {
    const now = this.#clock.now();
    const nextFireAt = nextFireAfter(input.schedule, now - 1);
    const instruction = input.instruction.trim();
    const task: TaskRecord = {
      id: input.id ?? this.#newId(),
      sessionKey: input.sessionKey,
      title: (input.title?.trim() || instruction.split("\n")[0] || "task").slice(0, 80),
      instruction,
      schedule: input.schedule,
      timeZone: input.timeZone,
      state: nextFireAt === undefined ? "done" : "active",
      kind: input.kind ?? "task",
      createdAt: now,
      createdBy: input.createdBy,
      ...(nextFireAt === undefined ? {} : { nextFireAt }),
    };
    await this.#write({ type: "task", task });
    this.#logger.info(
      {
        taskId: task.id,
        sessionKey: task.sessionKey,
        schedule: describeSchedule(task.schedule, task.timeZone),
      },
      "task created",
    );
    this.#rearm();
    return task;
  }

  /** Cancels a task: it never fires again (its history stays). Undefined for an unknown task. */
  async cancel(id: string): Promise<TaskRecord | undefined> {
    return this.#update(id, (task) => withoutNext({ ...task, state: "cancelled" }));
  }

  async pause(id: string): Promise<TaskRecord | undefined> {
    return this.#update(id, (task) => (task.state === "active" ? { ...task, state: "paused" } : task));
  }

  /** Resumes a paused task from now: what it would have fired meanwhile is not run. */
  async resume(id: string): Promise<TaskRecord | undefined> {
    const now = this.#clock.now();
    return this.#update(id, (task) => {
      if (task.state !== "paused") return task;
      const next = nextFireAfter(task.schedule, now - 1);
      return next === undefined
        ? withoutNext({ ...task, state: "done" })
        : { ...task, state: "active", nextFireAt: next };
    });
  }

  /** Removes a task (its firings stay in the history). False for an unknown task. */
  async delete(id: string): Promise<boolean> {
    const task = this.task(id);
    if (task === undefined) return false;
    await this.#write({ type: "task-deleted", id: task.id });
    this.#options.onEvent?.({ type: "task-deleted", taskId: task.id });
    return true;
  }

  /** Fires a task now, outside its schedule (its next time is unchanged). */
  async runNow(id: string): Promise<FiringRecord | undefined> {
    const task = this.task(id);
    if (task === undefined) return undefined;
    const now = this.#clock.now();
    const firing = newFiring(task, now, now, false, `${task.id}-now-${now}`);
    await this.#write({ type: "firing", firing });
    this.#enqueue(firing.id);
    return firing;
  }

  /** Claims every due task and runs it; called by the timer (and by tests after moving the clock). */
  async tick(): Promise<void> {
    if (this.#stopped) return;
    if (this.#ticking !== undefined) return this.#ticking;
    this.#ticking = this.#claimDue().finally(() => {
      this.#ticking = undefined;
      this.#rearm();
      this.#settleIdle();
    });
    return this.#ticking;
  }

  /** Counts by task state and by firing state (the metrics' gauges and `/status`). */
  counts(): { readonly tasks: Record<string, number>; readonly firings: Record<string, number> } {
    const tasks: Record<string, number> = {};
    for (const task of this.#state.tasks.values()) tasks[task.state] = (tasks[task.state] ?? 0) + 1;
    const firings: Record<string, number> = {};
    for (const firing of this.#state.firings.values())
      firings[firing.state] = (firings[firing.state] ?? 0) + 1;
    return { tasks, firings };
  }

  async #claimDue(): Promise<void> {
    const now = this.#clock.now();
    const lines: JournalLine[] = [];
    const claimed: string[] = [];
    for (const task of this.#state.tasks.values()) {
      if (task.state !== "active" || task.nextFireAt === undefined || task.nextFireAt > now) continue;
      const dueAt = task.nextFireAt;
      // The last time the schedule was due up to now: a recurring task fires once for the time it missed.
      let lastDue = dueAt;
      let missedRuns = 0;
      for (let next = nextFireAfter(task.schedule, lastDue); next !== undefined && next <= now; ) {
        lastDue = next;
        missedRuns += 1;
        next = nextFireAfter(task.schedule, next);
      }
      const following = nextFireAfter(task.schedule, now);
      const advanced: TaskRecord =
        following === undefined
          ? withoutNext({
              ...task,
              state: task.schedule.kind === "once" ? "done" : task.state,
              lastFiredAt: now,
            })
          : { ...task, nextFireAt: following, lastFiredAt: now };
      lines.push({ type: "task", task: advanced });
      const overdue = now - lastDue;
      if (overdue > this.#graceMs) {
        // Too late to be useful: said in the conversation, not run (a heartbeat just waits for its next time).
        if (task.kind === "heartbeat") continue;
        const firing: FiringRecord = {
          ...newFiring(task, dueAt, now, true),
          state: "answered",
          reply: missedNotice(task, dueAt, lastDue, missedRuns, following),
          missed: true,
        };
        lines.push({ type: "firing", firing });
        claimed.push(firing.id);
        continue;
      }
      const firing = newFiring(task, lastDue, now, overdue > LATE_AFTER_MS);
      lines.push({ type: "firing", firing });
      claimed.push(firing.id);
    }
    if (lines.length === 0) return;
    await this.#write(...lines);
    for (const id of claimed) this.#enqueue(id);
  }

  #enqueue(id: string): void {
    if (this.#active.has(id) || this.#waiting.includes(id)) return;
    this.#waiting.push(id);
    this.#pump();
  }

  #pump(): void {
    while (!this.#stopped && this.#running < this.#maxConcurrent) {
      const now = this.#clock.now();
      const index = this.#waiting.findIndex((id) => (this.#state.firings.get(id)?.retryAt ?? 0) <= now);
      if (index < 0) break;
      const [id] = this.#waiting.splice(index, 1) as [string];
      this.#running += 1;
      this.#active.add(id);
      void this.#work(id)
        .catch((error: unknown) =>
          this.#logger.error({ firingId: id, error: describeError(error) }, "firing failed unexpectedly"),
        )
        .finally(() => {
          this.#running -= 1;
          this.#active.delete(id);
          this.#pump();
          this.#rearm();
          this.#settleIdle();
        });
    }
  }

  /** Moves one firing through its states until it is finished or waits for a retry. */
  async #work(id: string): Promise<void> {
    for (;;) {
      const firing = this.#state.firings.get(id);
      if (firing === undefined || isFinished(firing)) return;
      if ((firing.retryAt ?? 0) > this.#clock.now()) {
        this.#waiting.push(id);
        return;
      }
      const task = this.#state.tasks.get(firing.taskId);
      if (firing.state === "claimed") {
        if (task === undefined || task.state === "cancelled") {
          await this.#finish(firing, "failed", {
            lastError: "the task was cancelled or deleted before it ran",
          });
          return;
        }
        await this.#answer(task, firing);
        continue;
      }
      if (firing.state === "answered") {
        await this.#deliver(task, firing);
        continue;
      }
      // `delivering`: the previous run died during the send.
      if (this.#options.runner.canRepeatSend(firing.sessionKey, firing.deliveringAt ?? firing.claimedAt)) {
        await this.#deliver(task, { ...firing, state: "answered" });
        continue;
      }
      await this.#finish(firing, "uncertain", {
        lastError:
          "the server stopped during the send and the platform could not tell a repeated message apart (it cannot, or no longer after this long), so it was not sent again",
      });
      return;
    }
  }

  async #answer(task: TaskRecord, firing: FiringRecord): Promise<void> {
    let reply: string;
    try {
      reply = await this.#options.runner.runTurn(task, firing);
    } catch (error) {
      await this.#failedAttempt(firing, `the turn failed: ${describeError(error)}`);
      return;
    }
    if (this.#options.isSilent?.(reply, task) === true) {
      await this.#finish({ ...firing, reply }, "silent", {});
      return;
    }
    await this.#write({ type: "firing", firing: { ...firing, state: "answered", reply, attempts: 0 } });
  }

  async #deliver(task: TaskRecord | undefined, firing: FiringRecord): Promise<void> {
    const text = firing.reply ?? "";
    if (task === undefined) {
      await this.#finish(firing, "failed", { lastError: "the task was deleted before its reply was sent" });
      return;
    }
    await this.#write({
      type: "firing",
      firing: { ...firing, state: "delivering", deliveringAt: this.#clock.now() },
    });
    try {
      await this.#options.runner.deliver(task, firing, text);
    } catch (error) {
      await this.#failedAttempt({ ...firing, state: "answered" }, `the send failed: ${describeError(error)}`);
      return;
    }
    await this.#finish(firing, firing.missed === true ? "missed" : "delivered", {});
  }

  async #failedAttempt(firing: FiringRecord, reason: string): Promise<void> {
    const attempts = firing.attempts + 1;
    if (attempts >= this.#maxAttempts) {
      this.#logger.error(
        { firingId: firing.id, taskId: firing.taskId, reason, attempts },
        "task firing failed",
      );
      await this.#finish({ ...firing, attempts }, "failed", { lastError: reason });
      return;
    }
    const wait = Math.min(this.#retryBaseMs * 2 ** (attempts - 1), 600_000);
    this.#logger.warn(
      { firingId: firing.id, taskId: firing.taskId, reason, attempts, retryInMs: wait },
      "task firing will be retried",
    );
    await this.#write({
      type: "firing",
      firing: { ...firing, attempts, lastError: reason, retryAt: this.#clock.now() + wait },
    });
  }

  async #finish(
    firing: FiringRecord,
    state: FiringRecord["state"],
    details: { readonly lastError?: string },
  ): Promise<void> {
    const { retryAt: _retry, ...rest } = firing;
    await this.#write({
      type: "firing",
      firing: { ...rest, state, finishedAt: this.#clock.now(), ...details },
    });
  }

  async #update(id: string, change: (task: TaskRecord) => TaskRecord): Promise<TaskRecord | undefined> {
    const task = this.task(id);
    if (task === undefined) return undefined;
    const changed = change(task);
    if (changed !== task) await this.#write({ type: "task", task: changed });
    this.#rearm();
    return changed;
  }

  /** Writes the lines durably, then applies them and tells the world. */
  async #write(...lines: JournalLine[]): Promise<void> {
    await this.#journal.append(...lines);
    for (const line of lines) {
      if (line.type === "task") {
        this.#state.tasks.set(line.task.id, line.task);
        this.#options.onEvent?.({ type: "task-changed", task: line.task });
      } else if (line.type === "firing") {
        this.#state.firings.set(line.firing.id, line.firing);
        this.#options.onEvent?.({
          type: "firing-changed",
          firing: line.firing,
          task: this.#state.tasks.get(line.firing.taskId),
        });
      } else {
        this.#state.tasks.delete(line.id);
      }
    }
  }

  /** Sets the timer for the next due task or retry (at most a minute away). */
  #rearm(): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    const now = this.#clock.now();
    let next = now + MAX_SLEEP_MS;
    for (const task of this.#state.tasks.values())
      if (task.state === "active" && task.nextFireAt !== undefined) next = Math.min(next, task.nextFireAt);
    for (const id of this.#waiting) {
      const retryAt = this.#state.firings.get(id)?.retryAt;
      if (retryAt !== undefined) next = Math.min(next, retryAt);
    }
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        this.#pump();
        void this.tick();
      },
      Math.max(0, next - now),
    );
  }

  #settleIdle(): void {
    if (this.#running > 0 || this.#ticking !== undefined) return;
    const now = this.#clock.now();
    if (this.#waiting.some((id) => (this.#state.firings.get(id)?.retryAt ?? 0) <= now)) return;
    for (const resolve of [...this.#idle]) resolve();
    this.#idle.clear();
  }

  #newId(): string {
    for (;;) {
      let id = "T";
      for (let index = 0; index < 5; index += 1) id += ID_ALPHABET[randomInt(ID_ALPHABET.length)];
      if (!this.#state.tasks.has(id)) return id;
    }
  }
}

function withoutNext(task: TaskRecord): TaskRecord {
  const { nextFireAt: _next, ...rest } = task;
  return rest;
}

function newFiring(task: TaskRecord, dueAt: number, now: number, late: boolean, id?: string): FiringRecord {
  return {
    id: id ?? `${task.id}-${dueAt}`,
    taskId: task.id,
    sessionKey: task.sessionKey,
    dueAt,
    claimedAt: now,
    state: "claimed",
    late,
    attempts: 0,
  };
}

/** What the conversation is told about a firing too late to run. */
function missedNotice(
  task: TaskRecord,
  dueAt: number,
  lastDue: number,
  missedRuns: number,
  following: number | undefined,
): string {
  const when = formatLocal(dueAt, task.timeZone);
  const runs =
    missedRuns > 0
      ? ` (and ${missedRuns} more time${missedRuns === 1 ? "" : "s"} until ${formatLocal(lastDue, task.timeZone)})`
      : "";
  const next = following === undefined ? "" : ` Next time: ${formatLocal(following, task.timeZone)}.`;
  return `I missed a scheduled task while I was not running: "${task.title}" was due ${when}${runs}. It was not run now because it is too late to be useful; tell me if you still want it.${next}`;
}
