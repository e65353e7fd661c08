import { describe, expect, it } from "vitest";
import { linkAbortSignals } from "./linked-signal.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("linkAbortSignals", () => {
  it("aborts with the reason of the source that aborts, and not as a timeout", async () => {
    const first = new AbortController();
    const second = new AbortController();
    const linked = linkAbortSignals([first.signal, undefined, second.signal], 20);
    const reason = new Error("stop");
    second.abort(reason);
    expect(linked.signal.aborted).toBe(true);
    expect(linked.signal.reason).toBe(reason);
    await sleep(40);
    expect(linked.timedOut()).toBe(false);
    linked.dispose();
  });

  it("starts aborted when a source already is", () => {
    const reason = new Error("gone");
    const linked = linkAbortSignals([AbortSignal.abort(reason)], 1_000);
    expect(linked.signal.reason).toBe(reason);
    linked.dispose();
  });

  it("times out with a TimeoutError, later when the timer is restarted", async () => {
    const linked = linkAbortSignals([new AbortController().signal], 40);
    await sleep(25);
    linked.restartTimer();
    await sleep(25);
    expect(linked.signal.aborted).toBe(false);
    await sleep(40);
    expect(linked.timedOut()).toBe(true);
    expect((linked.signal.reason as DOMException).name).toBe("TimeoutError");
    linked.dispose();
  });

  it("after dispose, neither a source nor the timer aborts it", async () => {
    const source = new AbortController();
    const linked = linkAbortSignals([source.signal], 20);
    linked.dispose();
    source.abort(new Error("late"));
    await sleep(40);
    expect(linked.signal.aborted).toBe(false);
    expect(linked.timedOut()).toBe(false);
  });
});
