import { isAlmanacError } from "@almanac/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLaneScheduler, type LaneScheduler, type StartTimer } from "./lane-scheduler.js";

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T = void>(): Deferred<T> {
  let resolve: (value: T) => void = () => {};
  let reject: (error: unknown) => void = () => {};
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}

/** Lets every queued promise callback run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function codeOf(error: unknown): string | undefined {
  return isAlmanacError(error) ? error.code : undefined;
}

async function rejectionCode(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return codeOf(error) ?? String(error);
  }
  return undefined;
}

/** A timer the test fires by hand, so deadlines need no waiting. */
function createManualTimer(): { startTimer: StartTimer; fire(): void; readonly pending: number } {
  const timers = new Set<() => void>();
  return {
    startTimer: (callback) => {
      timers.add(callback);
      return () => timers.delete(callback);
    },
    fire() {
      const due = [...timers];
      timers.clear();
      for (const callback of due) callback();
    },
    get pending() {
      return timers.size;
    },
  };
}

/** Starts a task that records its start and waits for the test to release it. */
function gatedTask(scheduler: LaneScheduler, key: string, log: string[], label: string) {
  const gate = deferred<string>();
  const result = scheduler.run(key, async () => {
    log.push(label);
    return gate.promise;
  });
  return { gate, result };
}

describe("createLaneScheduler", () => {
  it("runs the tasks of one key one at a time, in arrival order", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 4, laneCapacity: 10 });
    const log: string[] = [];
    const tasks = ["a", "b", "c"].map((label) => gatedTask(scheduler, "k", log, label));
    await settle();
    expect(log).toEqual(["a"]);
    expect(scheduler.stats().byKey("k")).toEqual({ running: true, queued: 2 });
    tasks[0]!.gate.resolve("A");
    await expect(tasks[0]!.result).resolves.toBe("A");
    await settle();
    expect(log).toEqual(["a", "b"]);
    tasks[1]!.gate.resolve("B");
    tasks[2]!.gate.resolve("C");
    await expect(Promise.all(tasks.map((task) => task.result))).resolves.toEqual(["A", "B", "C"]);
    expect(log).toEqual(["a", "b", "c"]);
  });

  it("keeps per-key order, no overlap within a key and the global limit under random interleavings", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(
          fc.record({ key: fc.nat(5), steps: fc.nat(3), fails: fc.boolean(), throwsAtOnce: fc.boolean() }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
        async (s, operations, maxConcurrent, laneCapacity) => {
          const scheduler = createLaneScheduler({ maxConcurrent, laneCapacity });
          const accepted = new Map<number, number[]>();
          const started = new Map<number, number[]>();
          const runningPerKey = new Map<number, number>();
          const runs = operations.map(() => 0);
          let runningNow = 0;
          let maxRunning = 0;
          const outcomes = operations.map((operation, index) =>
            s.schedule(Promise.resolve()).then(async () => {
              const key = `k${operation.key}`;
              const lane = scheduler.stats().byKey(key);
              const pending = lane.queued + (lane.running ? 1 : 0);
              const result = scheduler.run(key, (): Promise<number> => {
                const overlapping = (runningPerKey.get(operation.key) ?? 0) + 1;
                expect(overlapping).toBe(1);
                started.set(operation.key, [...(started.get(operation.key) ?? []), index]);
                runs[index] = (runs[index] ?? 0) + 1;
                // Some tasks throw before returning a promise at all.
                if (operation.fails && operation.throwsAtOnce) throw new Error(`task ${index}`);
                runningPerKey.set(operation.key, overlapping);
                runningNow += 1;
                maxRunning = Math.max(maxRunning, runningNow);
                return (async () => {
                  for (let step = 0; step < operation.steps; step += 1) await s.schedule(Promise.resolve());
                  runningNow -= 1;
                  runningPerKey.set(operation.key, 0);
                  if (operation.fails) throw new Error(`task ${index}`);
                  return index;
                })();
              });
              if (pending <= laneCapacity) {
                accepted.set(operation.key, [...(accepted.get(operation.key) ?? []), index]);
              }
              return result.then(
                (value) => ({ index, pending, value, error: undefined }),
                (error: unknown) => ({ index, pending, value: undefined, error }),
              );
            }),
          );
          const results = await s.waitFor(Promise.all(outcomes));

          for (const result of results) {
            const operation = operations[result.index]!;
            if (result.pending > laneCapacity) {
              expect(codeOf(result.error)).toBe("session.busy");
              expect(runs[result.index]).toBe(0);
            } else if (operation.fails) {
              expect(result.error).toEqual(new Error(`task ${result.index}`));
              expect(runs[result.index]).toBe(1);
            } else {
              expect(result.value).toBe(result.index);
              expect(runs[result.index]).toBe(1);
            }
          }
          expect(started).toEqual(accepted);
          expect(maxRunning).toBeLessThanOrEqual(maxConcurrent);
          expect(scheduler.stats()).toMatchObject({ running: 0, queued: 0, lanes: 0 });
        },
      ),
      { numRuns: 200 },
    );
  });

  it("fills every global slot under load and never more", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 4, laneCapacity: 5 });
    const log: string[] = [];
    let runningNow = 0;
    let maxRunning = 0;
    const gates = Array.from({ length: 20 }, () => deferred());
    const results = gates.map((gate, index) =>
      scheduler.run(`key-${index % 10}`, async () => {
        log.push(`start-${index}`);
        runningNow += 1;
        maxRunning = Math.max(maxRunning, runningNow);
        await gate.promise;
        runningNow -= 1;
      }),
    );
    await settle();
    expect(scheduler.stats()).toMatchObject({ running: 4, queued: 16, lanes: 10 });
    for (const gate of gates) {
      gate.resolve();
      await settle();
      expect(scheduler.stats().running).toBeLessThanOrEqual(4);
    }
    await Promise.all(results);
    expect(maxRunning).toBe(4);
    expect(log).toHaveLength(20);
  });

  it("gives a freed slot to the oldest waiting task of any lane", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 1, laneCapacity: 5 });
    const log: string[] = [];
    const record = (label: string) => async () => {
      log.push(label);
    };
    const first = gatedTask(scheduler, "a", log, "a1");
    const rest = [
      scheduler.run("a", record("a2")),
      scheduler.run("b", record("b1")),
      scheduler.run("c", record("c1")),
      scheduler.run("b", record("b2")),
    ];
    first.gate.resolve("done");
    await Promise.all([first.result, ...rest]);
    expect(log).toEqual(["a1", "a2", "b1", "c1", "b2"]);
  });

  it("lets a lane whose head waited longer go before a lane that became ready later", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 1, laneCapacity: 5 });
    const log: string[] = [];
    const record = (label: string) => async () => {
      log.push(label);
    };
    // a2 arrives before c1, but lane "a" only becomes ready (when a1 ends) after lane "c" did;
    // a2 is still the older task, so it must start before c1.
    const a1 = gatedTask(scheduler, "a", log, "a1");
    const b1 = scheduler.run("b", record("b1"));
    const a2 = scheduler.run("a", record("a2"));
    const c1 = scheduler.run("c", record("c1"));
    a1.gate.resolve("done");
    await Promise.all([a1.result, b1, a2, c1]);
    expect(log).toEqual(["a1", "b1", "a2", "c1"]);
  });

  it("refuses a task at once with session.busy when its lane is full, and loses none it accepted", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 2, laneCapacity: 2 });
    const gate = deferred();
    const ran: number[] = [];
    const submit = (index: number) =>
      scheduler.run("busy", async () => {
        ran.push(index);
        await gate.promise;
      });
    const accepted = [submit(0), submit(1), submit(2)];
    const refused = submit(3);
    await expect(refused).rejects.toMatchObject({
      code: "session.busy",
      message:
        "This conversation is still working on 3 earlier messages; please wait for the reply and try again.",
    });
    expect(await rejectionCode(scheduler.run("other", async () => "fine"))).toBeUndefined();
    gate.resolve();
    await Promise.all(accepted);
    expect(ran).toEqual([0, 1, 2]);
    await expect(submit(4)).resolves.toBeUndefined();
  });

  it("takes one message at a time per conversation when the lane capacity is zero", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 1, laneCapacity: 0 });
    const log: string[] = [];
    const busy = gatedTask(scheduler, "x", log, "x1");
    const other = gatedTask(scheduler, "y", log, "y1");
    expect(await rejectionCode(scheduler.run("x", async () => {}))).toBe("session.busy");
    expect(await rejectionCode(scheduler.run("y", async () => {}))).toBe("session.busy");
    busy.gate.resolve("ok");
    other.gate.resolve("ok");
    await Promise.all([busy.result, other.result]);
    expect(log).toEqual(["x1", "y1"]);
  });

  it("runs the next task of a lane after one that throws, and hands the error to its caller", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 1, laneCapacity: 5 });
    const failure = new Error("boom");
    const first = scheduler.run("k", async () => {
      throw failure;
    });
    const second = scheduler.run("k", () => {
      throw new Error("thrown before any promise");
    });
    const third = scheduler.run("k", async () => "still works");
    await expect(first).rejects.toBe(failure);
    await expect(second).rejects.toThrow("thrown before any promise");
    await expect(third).resolves.toBe("still works");
    expect(scheduler.stats().lanes).toBe(0);
  });

  it("forgets lanes once they are empty, however many keys it has seen", async () => {
    const scheduler = createLaneScheduler({ maxConcurrent: 8, laneCapacity: 1 });
    await Promise.all(
      Array.from({ length: 10_000 }, (_, index) => scheduler.run(`key-${index}`, async () => index)),
    );
    expect(scheduler.stats()).toMatchObject({ running: 0, queued: 0, lanes: 0 });
    expect(scheduler.stats().byKey("key-1")).toEqual({ running: false, queued: 0 });
  });

  it("on close, refuses new tasks and resolves once running and queued tasks have finished", async () => {
    const timer = createManualTimer();
    const scheduler = createLaneScheduler({
      maxConcurrent: 1,
      laneCapacity: 5,
      startTimer: timer.startTimer,
    });
    const log: string[] = [];
    const first = gatedTask(scheduler, "a", log, "a1");
    const queued = gatedTask(scheduler, "b", log, "b1");
    let closed = false;
    const closing = scheduler.close({ deadlineMs: 5_000 });
    void closing.then(() => {
      closed = true;
    });
    expect(await rejectionCode(scheduler.run("c", async () => {}))).toBe("server.shutting_down");
    first.gate.resolve("a");
    await settle();
    expect(log).toEqual(["a1", "b1"]);
    expect(closed).toBe(false);
    queued.gate.resolve("b");
    expect(await closing).toEqual({ finished: 2, aborted: 0, rejected: 0 });
    await expect(Promise.all([first.result, queued.result])).resolves.toEqual(["a", "b"]);
    expect(timer.pending).toBe(0);
    expect(scheduler.close({ deadlineMs: 1 })).toBe(closing);
  });

  it("keeps draining until the close deadline, then aborts running tasks and rejects queued ones", async () => {
    const timer = createManualTimer();
    const scheduler = createLaneScheduler({
      maxConcurrent: 3,
      laneCapacity: 5,
      startTimer: timer.startTimer,
    });
    const signals: AbortSignal[] = [];
    const stubborn = (key: string) =>
      scheduler.run(key, (signal) => {
        signals.push(signal);
        return new Promise<string>((_resolve, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason));
        });
      });
    const quick = deferred<string>();
    const running = [stubborn("a"), stubborn("b")];
    const quickResult = scheduler.run("d", () => quick.promise);
    const waitingForSlot = scheduler.run("c", async () => "ran during the drain");
    const behindStubborn = [scheduler.run("a", async () => "never"), scheduler.run("b", async () => "never")];
    const closing = scheduler.close({ deadlineMs: 30_000 });
    quick.resolve("quick");
    await expect(quickResult).resolves.toBe("quick");
    await expect(waitingForSlot).resolves.toBe("ran during the drain");
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);

    timer.fire();
    expect(await closing).toEqual({ finished: 2, aborted: 2, rejected: 2 });
    expect(signals.map((signal) => signal.aborted)).toEqual([true, true]);
    expect(codeOf(signals[0]!.reason)).toBe("server.shutting_down");
    for (const promise of [...running, ...behindStubborn]) {
      expect(await rejectionCode(promise)).toBe("server.shutting_down");
    }
    expect(scheduler.stats()).toMatchObject({ running: 0, queued: 0, lanes: 0 });
  });

  it("closes at once when there is no work", async () => {
    const timer = createManualTimer();
    const scheduler = createLaneScheduler({
      maxConcurrent: 1,
      laneCapacity: 1,
      startTimer: timer.startTimer,
    });
    await expect(scheduler.close({ deadlineMs: 1_000 })).resolves.toEqual({
      finished: 0,
      aborted: 0,
      rejected: 0,
    });
    expect(timer.pending).toBe(0);
  });

  it("rejects limits that are not sensible integers", () => {
    for (const options of [
      { maxConcurrent: 0, laneCapacity: 1 },
      { maxConcurrent: 1.5, laneCapacity: 1 },
      { maxConcurrent: 1, laneCapacity: -1 },
    ]) {
      expect(() => createLaneScheduler(options)).toThrow(expect.objectContaining({ code: "config.invalid" }));
    }
  });
});
