import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { type WatchedSocket, watchConnection } from "./connection-watchdog.js";
import type { DingTalkClock } from "./types.js";

/** A clock whose sleeps end only when the test advances time past them. */
function steppedClock(): DingTalkClock & { advance(ms: number): Promise<void> } {
  let now = 0;
  let waiters: { until: number; resolve: () => void }[] = [];
  return {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise((resolve) => {
        if (signal?.aborted === true) return resolve();
        const onAbort = (): void => resolve();
        signal?.addEventListener("abort", onAbort, { once: true });
        waiters.push({
          until: now + ms,
          resolve: () => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
          },
        });
      }),
    async advance(ms) {
      now += ms;
      const due = waiters.filter((waiter) => waiter.until <= now);
      waiters = waiters.filter((waiter) => waiter.until > now);
      for (const waiter of due) waiter.resolve();
      // Let the watchdog's loop run up to its next sleep.
      for (let turn = 0; turn < 5; turn += 1) await Promise.resolve();
    },
  };
}

/** A socket that records pings and terminations; the test decides when pongs arrive. */
class FakeSocket extends EventEmitter implements WatchedSocket {
  readyState = 1;
  pings = 0;
  terminated = false;
  ping(): void {
    this.pings += 1;
  }
  terminate(): void {
    this.terminated = true;
    this.readyState = 3;
    this.emit("close");
  }
}

function start(options: { lastHeardAt: () => number; stop?: AbortController }) {
  const clock = steppedClock();
  const socket = new FakeSocket();
  const silences: number[] = [];
  const done = watchConnection(socket, {
    clock,
    intervalMs: 100,
    timeoutMs: 300,
    lastHeardAt: options.lastHeardAt,
    stopSignal: (options.stop ?? new AbortController()).signal,
    onSilent: (silentMs) => silences.push(silentMs),
  });
  return { clock, socket, silences, done };
}

describe("connection watchdog", () => {
  it("pings every interval and keeps a socket that keeps answering", async () => {
    let heardAt = 0;
    const { clock, socket, silences } = start({ lastHeardAt: () => heardAt });
    for (let tick = 1; tick <= 20; tick += 1) {
      await clock.advance(100);
      heardAt = clock.now(); // the pong
    }
    expect(socket.pings).toBe(20);
    expect(socket.terminated).toBe(false);
    expect(silences).toEqual([]);
  });

  it("terminates a socket silent for the timeout, at the first check past it, and stops watching", async () => {
    const { clock, socket, silences, done } = start({ lastHeardAt: () => 0 });
    await clock.advance(100);
    await clock.advance(100);
    expect(socket.terminated).toBe(false);
    expect(socket.pings).toBe(2);
    await clock.advance(100);
    expect(socket.terminated).toBe(true);
    expect(silences).toEqual([300]);
    await done;
    await clock.advance(1_000);
    expect(socket.pings).toBe(2);
  });

  it("ends without terminating when the socket closes or the client stops", async () => {
    const closedByPeer = start({ lastHeardAt: () => 0 });
    closedByPeer.socket.emit("close");
    await closedByPeer.done;
    const stop = new AbortController();
    const stopped = start({ lastHeardAt: () => 0, stop });
    stop.abort();
    await stopped.done;
    for (const run of [closedByPeer, stopped]) {
      await run.clock.advance(1_000);
      expect(run.socket.terminated).toBe(false);
      expect(run.socket.pings).toBe(0);
    }
  });
});
