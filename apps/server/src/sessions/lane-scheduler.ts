import { type Logger, silentLogger, UserError } from "@almanac/core";

/** Starts a timer; returns a function that cancels it. Injected so tests control time. */
export type StartTimer = (callback: () => void, delayMs: number) => () => void;

/** Options of {@link createLaneScheduler}. */
export interface LaneSchedulerOptions {
  /** Most tasks running at once over all keys (a positive integer). */
  readonly maxConcurrent: number;
  /**
   * Most tasks that may wait behind the one a lane is working on (or about to start); one more is refused
   * with `session.busy`. `0` means a conversation takes one message at a time.
   */
  readonly laneCapacity: number;
  readonly logger?: Logger;
  /** Timer used for the {@link LaneScheduler.close} deadline; defaults to `setTimeout`. */
  readonly startTimer?: StartTimer;
}

/** A key's share of {@link LaneSchedulerStats}. */
export interface LaneStats {
  /** Whether a task of this key is running now. */
  readonly running: boolean;
  /** Tasks of this key waiting to start (for a slot or behind the running one). */
  readonly queued: number;
}

/** Counters of a {@link LaneScheduler} at the time of the `stats()` call. */
export interface LaneSchedulerStats {
  readonly running: number;
  readonly queued: number;
  /** Keys with a running or waiting task (idle keys are forgotten). */
  readonly lanes: number;
  /** The current state of one key's lane (read live, not at the time of `stats()`). */
  byKey(key: string): LaneStats;
}

/** What {@link LaneScheduler.close} did with the work it found. */
export interface LaneSchedulerCloseResult {
  /** Tasks (running or queued when closing began) that settled before the deadline. */
  readonly finished: number;
  /** Running tasks whose signal was aborted at the deadline. */
  readonly aborted: number;
  /** Queued tasks rejected with `server.shutting_down` at the deadline, never started. */
  readonly rejected: number;
}

/**
 * Runs tasks in one FIFO lane per key (e.g. per session): tasks of a key never overlap and start in
 * arrival order; different keys run in parallel up to a global limit, the oldest waiting task first.
 */
export interface LaneScheduler {
  /**
   * Queues `task` in `key`'s lane and settles like it. A failing task does not affect the ones after it.
   * @throws UserError `session.busy` (at once) when the lane is full; `server.shutting_down` after `close()`.
   */
  run<T>(key: string, task: (signal: AbortSignal) => Promise<T>): Promise<T>;
  stats(): LaneSchedulerStats;
  /**
   * Stops intake, lets running and queued tasks finish until `deadlineMs` has passed, then aborts the
   * running tasks' signals and rejects the queued ones. Resolves without waiting for aborted tasks to settle
   * (their callers still get their outcome). Calling it again returns the same result.
   */
  close(options: { readonly deadlineMs: number }): Promise<LaneSchedulerCloseResult>;
}

interface Job {
  readonly sequence: number;
  /** Calls the task; resolves (never rejects) with a function that settles the caller's promise. */
  readonly begin: (signal: AbortSignal) => Promise<() => void>;
  readonly reject: (error: unknown) => void;
  controller: AbortController | undefined;
}

interface Lane {
  readonly key: string;
  running: Job | undefined;
  waiting: Job[];
}

const defaultStartTimer: StartTimer = (callback, delayMs) => {
  const handle = setTimeout(callback, delayMs);
  return () => clearTimeout(handle);
};

function shuttingDown(message: string): UserError {
  return new UserError("server.shutting_down", message);
}

/** Creates a {@link LaneScheduler}. */
export function createLaneScheduler(options: LaneSchedulerOptions): LaneScheduler {
  return new FifoLaneScheduler(options);
}

/**
 * The {@link LaneScheduler} {@link createLaneScheduler} makes. Named apart from the interface so the interface
 * stays the public type: callers and fakes depend on the shape, not on this class's private state.
 */
class FifoLaneScheduler implements LaneScheduler {
  readonly #maxConcurrent: number;
  readonly #laneCapacity: number;
  readonly #logger: Logger;
  readonly #startTimer: StartTimer;
  readonly #lanes = new Map<string, Lane>();
  // Lanes whose head waits for a global slot, oldest head first.
  readonly #ready = new LaneHeap();
  #running = 0;
  #queued = 0;
  #sequence = 0;
  #closing: Closing | undefined;

  constructor(options: LaneSchedulerOptions) {
    const { maxConcurrent, laneCapacity } = options;
    if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
      throw new UserError(
        "config.invalid",
        `maxConcurrent must be a positive integer, got ${maxConcurrent}.`,
      );
    }
    if (!Number.isInteger(laneCapacity) || laneCapacity < 0) {
      throw new UserError(
        "config.invalid",
        `laneCapacity must be a non-negative integer, got ${laneCapacity}.`,
      );
    }
    this.#maxConcurrent = maxConcurrent;
    this.#laneCapacity = laneCapacity;
    this.#logger = options.logger ?? silentLogger;
    this.#startTimer = options.startTimer ?? defaultStartTimer;
  }

  run<T>(key: string, task: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) {
      return Promise.reject(
        shuttingDown("The server is shutting down and cannot take new messages; please try again shortly."),
      );
    }
    const existing = this.#lanes.get(key);
    const pending = existing === undefined ? 0 : existing.waiting.length + (existing.running ? 1 : 0);
    if (pending > this.#laneCapacity) {
      this.#logger.debug({ key, pending }, "lane full; refusing task");
      const messages = pending === 1 ? "1 earlier message" : `${pending} earlier messages`;
      return Promise.reject(
        new UserError(
          "session.busy",
          `This conversation is still working on ${messages}; please wait for the reply and try again.`,
        ),
      );
    }
    const lane: Lane = existing ?? { key, running: undefined, waiting: [] };
    if (existing === undefined) this.#lanes.set(key, lane);
    return new Promise<T>((resolve, reject) => {
      lane.waiting.push({
        sequence: this.#sequence++,
        controller: undefined,
        reject,
        begin: async (signal) => {
          try {
            const value = await task(signal);
            return () => resolve(value);
          } catch (error) {
            return () => reject(error);
          }
        },
      });
      this.#queued += 1;
      if (lane.running === undefined && lane.waiting.length === 1) this.#ready.push(lane);
      this.#dispatch();
    });
  }

  stats(): LaneSchedulerStats {
    // `byKey` reads the live map, so it must not depend on `this` (callers may keep the stats object).
    const lanes = this.#lanes;
    return {
      running: this.#running,
      queued: this.#queued,
      lanes: lanes.size,
      byKey(key: string): LaneStats {
        const lane = lanes.get(key);
        return { running: lane?.running !== undefined, queued: lane?.waiting.length ?? 0 };
      },
    };
  }

  close({ deadlineMs }: { readonly deadlineMs: number }): Promise<LaneSchedulerCloseResult> {
    if (this.#closing !== undefined) return this.#closing.result;
    const closing = new Closing();
    this.#closing = closing;
    this.#logger.info(
      { running: this.#running, queued: this.#queued, deadlineMs },
      "lane scheduler closing; draining session work",
    );
    closing.armDeadline(this.#startTimer, deadlineMs, () => this.#expire(closing));
    this.#checkDrained();
    return closing.result;
  }

  #dispatch(): void {
    while (this.#running < this.#maxConcurrent && this.#ready.size > 0) this.#start(this.#ready.pop()!);
  }

  #start(lane: Lane): void {
    const job = lane.waiting.shift()!;
    this.#queued -= 1;
    this.#running += 1;
    lane.running = job;
    const controller = new AbortController();
    job.controller = controller;
    void job.begin(controller.signal).then((settle) => {
      this.#finish(lane);
      settle();
    });
  }

  #finish(lane: Lane): void {
    this.#running -= 1;
    lane.running = undefined;
    const closing = this.#closing;
    if (closing !== undefined && !closing.deadlinePassed) closing.counts.finished += 1;
    if (lane.waiting.length > 0) this.#ready.push(lane);
    else this.#lanes.delete(lane.key);
    this.#dispatch();
    this.#checkDrained();
  }

  /** While closing, resolves `close()` once nothing runs or waits (before the deadline). */
  #checkDrained(): void {
    if (this.#closing === undefined || this.#running > 0 || this.#queued > 0) return;
    this.#closing.drained();
  }

  /** At the deadline: rejects every waiting task and aborts every running one. */
  #expire(closing: Closing): void {
    closing.deadlinePassed = true;
    const reason = shuttingDown("The server is shutting down; this reply was stopped.");
    for (const lane of this.#lanes.values()) {
      for (const job of lane.waiting) {
        job.reject(
          shuttingDown("The server shut down before this message could be handled; please send it again."),
        );
        closing.counts.rejected += 1;
      }
      this.#queued -= lane.waiting.length;
      lane.waiting = [];
      if (lane.running === undefined) this.#lanes.delete(lane.key);
      else {
        closing.counts.aborted += 1;
        lane.running.controller?.abort(reason);
      }
    }
    this.#ready.clear();
    if (closing.counts.aborted + closing.counts.rejected > 0) {
      this.#logger.warn(
        { ...closing.counts },
        "shutdown deadline passed; stopped the remaining session work",
      );
    }
  }
}

/**
 * One `close()` of a scheduler: its counts and its result, settled once, either when the work drains or when
 * the deadline passes, whichever comes first.
 */
class Closing {
  readonly result: Promise<LaneSchedulerCloseResult>;
  readonly counts = { finished: 0, aborted: 0, rejected: 0 };
  deadlinePassed = false;
  readonly #resolve: (result: LaneSchedulerCloseResult) => void;
  #settled = false;
  #cancelTimer: () => void = () => {};

  constructor() {
    let resolveResult: (result: LaneSchedulerCloseResult) => void = () => {};
    this.result = new Promise<LaneSchedulerCloseResult>((resolve) => {
      resolveResult = resolve;
    });
    this.#resolve = resolveResult;
  }

  /** Starts the deadline timer: unless drained by then, `onDeadline` runs and the result settles. */
  armDeadline(startTimer: StartTimer, deadlineMs: number, onDeadline: () => void): void {
    this.#cancelTimer = startTimer(() => {
      if (this.#settled) return;
      onDeadline();
      this.#settled = true;
      this.#resolve({ ...this.counts });
    }, deadlineMs);
  }

  /** Nothing runs or waits any more: settles the result (once) and cancels the deadline. */
  drained(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#cancelTimer();
    this.#resolve({ ...this.counts });
  }
}

/** A binary min-heap of lanes ordered by the arrival of their first waiting task. */
class LaneHeap {
  readonly #items: Lane[] = [];

  get size(): number {
    return this.#items.length;
  }

  push(lane: Lane): void {
    const items = this.#items;
    items.push(lane);
    let index = items.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (order(items[parent]!) <= order(items[index]!)) break;
      this.#swap(parent, index);
      index = parent;
    }
  }

  pop(): Lane | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let index = 0;
      for (;;) {
        const left = index * 2 + 1;
        const right = left + 1;
        let smallest = index;
        if (left < items.length && order(items[left]!) < order(items[smallest]!)) smallest = left;
        if (right < items.length && order(items[right]!) < order(items[smallest]!)) smallest = right;
        if (smallest === index) break;
        this.#swap(smallest, index);
        index = smallest;
      }
    }
    return top;
  }

  clear(): void {
    this.#items.length = 0;
  }

  #swap(a: number, b: number): void {
    const items = this.#items;
    const item = items[a]!;
    items[a] = items[b]!;
    items[b] = item;
  }
}

/** A lane's place in the heap: the sequence of its first waiting task (an empty lane sorts last). */
function order(lane: Lane): number {
  return lane.waiting[0]?.sequence ?? Number.POSITIVE_INFINITY;
}
