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

interface Closing {
  readonly result: Promise<LaneSchedulerCloseResult>;
  readonly counts: { finished: number; aborted: number; rejected: number };
  deadlinePassed: boolean;
  checkDrained(): void;
}

const defaultStartTimer: StartTimer = (callback, delayMs) => {
  const handle = setTimeout(callback, delayMs);
  return () => clearTimeout(handle);
};

/** Creates a {@link LaneScheduler}. */
export function createLaneScheduler(options: LaneSchedulerOptions): LaneScheduler {
  const { maxConcurrent, laneCapacity } = options;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new UserError("config.invalid", `maxConcurrent must be a positive integer, got ${maxConcurrent}.`);
  }
  if (!Number.isInteger(laneCapacity) || laneCapacity < 0) {
    throw new UserError(
      "config.invalid",
      `laneCapacity must be a non-negative integer, got ${laneCapacity}.`,
    );
  }
  const logger = options.logger ?? silentLogger;
  const startTimer = options.startTimer ?? defaultStartTimer;
  const lanes = new Map<string, Lane>();
  // Lanes whose head waits for a global slot, oldest head first.
  const ready = createLaneHeap();
  let running = 0;
  let queued = 0;
  let sequence = 0;
  let closing: Closing | undefined;

  function dispatch(): void {
    while (running < maxConcurrent && ready.size > 0) start(ready.pop()!);
  }

  function start(lane: Lane): void {
    const job = lane.waiting.shift()!;
    queued -= 1;
    running += 1;
    lane.running = job;
    const controller = new AbortController();
    job.controller = controller;
    void job.begin(controller.signal).then((settle) => {
      finish(lane);
      settle();
    });
  }

  function finish(lane: Lane): void {
    running -= 1;
    lane.running = undefined;
    if (closing !== undefined && !closing.deadlinePassed) closing.counts.finished += 1;
    if (lane.waiting.length > 0) ready.push(lane);
    else lanes.delete(lane.key);
    dispatch();
    closing?.checkDrained();
  }

  function shuttingDown(message: string): UserError {
    return new UserError("server.shutting_down", message);
  }

  function expire(state: Closing): void {
    state.deadlinePassed = true;
    const reason = shuttingDown("The server is shutting down; this reply was stopped.");
    for (const lane of lanes.values()) {
      for (const job of lane.waiting) {
        job.reject(
          shuttingDown("The server shut down before this message could be handled; please send it again."),
        );
        state.counts.rejected += 1;
      }
      queued -= lane.waiting.length;
      lane.waiting = [];
      if (lane.running === undefined) lanes.delete(lane.key);
      else {
        state.counts.aborted += 1;
        lane.running.controller?.abort(reason);
      }
    }
    ready.clear();
    if (state.counts.aborted + state.counts.rejected > 0) {
      logger.warn({ ...state.counts }, "shutdown deadline passed; stopped the remaining session work");
    }
  }

  return {
    run<T>(key: string, task: (signal: AbortSignal) => Promise<T>): Promise<T> {
      if (closing !== undefined) {
        return Promise.reject(
          shuttingDown("The server is shutting down and cannot take new messages; please try again shortly."),
        );
      }
      const existing = lanes.get(key);
      const pending = existing === undefined ? 0 : existing.waiting.length + (existing.running ? 1 : 0);
      if (pending > laneCapacity) {
        logger.debug({ key, pending }, "lane full; refusing task");
        const messages = pending === 1 ? "1 earlier message" : `${pending} earlier messages`;
        return Promise.reject(
          new UserError(
            "session.busy",
            `This conversation is still working on ${messages}; please wait for the reply and try again.`,
          ),
        );
      }
      const lane: Lane = existing ?? { key, running: undefined, waiting: [] };
      if (existing === undefined) lanes.set(key, lane);
      return new Promise<T>((resolve, reject) => {
        lane.waiting.push({
          sequence: sequence++,
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
        queued += 1;
        if (lane.running === undefined && lane.waiting.length === 1) ready.push(lane);
        dispatch();
      });
    },

    stats() {
      return {
        running,
        queued,
        lanes: lanes.size,
        byKey(key: string): LaneStats {
          const lane = lanes.get(key);
          return { running: lane?.running !== undefined, queued: lane?.waiting.length ?? 0 };
        },
      };
    },

    close({ deadlineMs }) {
      if (closing !== undefined) return closing.result;
      let resolveResult: (result: LaneSchedulerCloseResult) => void = () => {};
      const result = new Promise<LaneSchedulerCloseResult>((resolve) => {
        resolveResult = resolve;
      });
      let settled = false;
      let cancelTimer: () => void = () => {};
      const state: Closing = {
        result,
        counts: { finished: 0, aborted: 0, rejected: 0 },
        deadlinePassed: false,
        checkDrained() {
          if (settled || running > 0 || queued > 0) return;
          settled = true;
          cancelTimer();
          resolveResult({ ...state.counts });
        },
      };
      closing = state;
      logger.info({ running, queued, deadlineMs }, "lane scheduler closing; draining session work");
      cancelTimer = startTimer(() => {
        if (settled) return;
        expire(state);
        settled = true;
        resolveResult({ ...state.counts });
      }, deadlineMs);
      state.checkDrained();
      return result;
    },
  };
}

/** A binary min-heap of lanes ordered by the arrival of their first waiting task. */
function createLaneHeap() {
  const items: Lane[] = [];
  const order = (lane: Lane): number => lane.waiting[0]?.sequence ?? Number.POSITIVE_INFINITY;
  const swap = (a: number, b: number): void => {
    const item = items[a]!;
    items[a] = items[b]!;
    items[b] = item;
  };
  return {
    get size(): number {
      return items.length;
    },
    push(lane: Lane): void {
      items.push(lane);
      let index = items.length - 1;
      while (index > 0) {
        const parent = (index - 1) >> 1;
        if (order(items[parent]!) <= order(items[index]!)) break;
        swap(parent, index);
        index = parent;
      }
    },
    pop(): Lane | undefined {
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
          swap(smallest, index);
          index = smallest;
        }
      }
      return top;
    },
    clear(): void {
      items.length = 0;
    },
  };
}
