import { describe, expect, it } from "vitest";
import { groupCalls } from "./grouped-calls.js";

/** A run that waits to be released, recording when it started and what it saw then. */
function controlledRuns() {
  const started: { key: string; saw: number; release: () => void; fail: (error: Error) => void }[] = [];
  let world = 0;
  const run = (key: string) =>
    new Promise<string>((resolve, reject) => {
      const saw = world;
      started.push({ key, saw, release: () => resolve(`${key}@${saw}`), fail: reject });
    });
  return {
    run,
    started,
    change: () => {
      world += 1;
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("groupCalls", () => {
  it("gives the calls made while a run goes one more run, after it, that they share", async () => {
    const { run, started, change } = controlledRuns();
    const grouped = groupCalls(run);
    const first = grouped("a");
    change(); // made after the first run read the world
    const meanwhile = Array.from({ length: 20 }, () => grouped("a"));
    expect(started).toHaveLength(1);
    started[0]?.release();
    await settle();
    expect(started).toHaveLength(2);
    started[1]?.release();
    expect(await first).toBe("a@0");
    // Every later caller sees the change made before its call.
    expect(await Promise.all(meanwhile)).toEqual(Array(20).fill("a@1"));
    expect(started).toHaveLength(2);
  });

  it("runs again for a call made after the previous run ended, and keeps keys apart", async () => {
    const { run, started, change } = controlledRuns();
    const grouped = groupCalls(run);
    const a = grouped("a");
    const b = grouped("b");
    expect(started.map((entry) => entry.key)).toEqual(["a", "b"]);
    for (const entry of started) entry.release();
    expect([await a, await b]).toEqual(["a@0", "b@0"]);
    change();
    const again = grouped("a");
    started[2]?.release();
    expect(await again).toBe("a@1");
    expect(started).toHaveLength(3);
  });

  it("rejects a whole group with its run's error, and the next call starts afresh", async () => {
    const { run, started } = controlledRuns();
    const grouped = groupCalls(run);
    const first = grouped("a");
    const meanwhile = [grouped("a"), grouped("a")];
    started[0]?.release();
    await settle();
    started[1]?.fail(new Error("disk gone"));
    expect(await first).toBe("a@0");
    for (const call of meanwhile) await expect(call).rejects.toThrow("disk gone");
    const next = grouped("a");
    started[2]?.release();
    expect(await next).toBe("a@0");
  });

  it("starts the queued run after a failed one", async () => {
    const { run, started } = controlledRuns();
    const grouped = groupCalls(run);
    const first = grouped("a");
    const meanwhile = grouped("a");
    started[0]?.fail(new Error("busy"));
    await expect(first).rejects.toThrow("busy");
    await settle();
    started[1]?.release();
    expect(await meanwhile).toBe("a@0");
  });
});
