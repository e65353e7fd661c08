import type { ChannelStatus } from "@almanac/core";
import { silentLogger } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { createEventBus, type ServerEvent } from "./event-bus.js";
import { createStatusSampler, indexFigures } from "./status-sampler.js";

describe("status sampler", () => {
  it("publishes only what changed since the last reading", async () => {
    const bus = createEventBus();
    const events: ServerEvent[] = [];
    bus.subscribe((published) => events.push(published.event));
    let queue = { pending: 0, running: 0, parked: 0, done: 0 };
    let index: Record<string, unknown> = { state: "syncing", files: 1, chunks: 3 };
    let channel: ChannelStatus = { channel: "discord", state: "connecting" };
    const sampler = createStatusSampler({
      bus,
      logger: silentLogger,
      intervalMs: 60_000,
      sources: { queue: async () => queue, index: async () => index, channels: () => [channel] },
    });
    const first = await sampler.sample();
    expect(first.index).toEqual({ state: "syncing", files: 1, chunks: 3, rebuilding: false });
    expect(events).toEqual([]);

    queue = { ...queue, pending: 1 };
    channel = { ...channel, state: "ready", lastEventAt: 5 };
    await sampler.sample();
    expect(events).toEqual([
      { type: "queue-changed", queue: { pending: 1, running: 0, parked: 0, done: 0 } },
      { type: "channel-changed", channel: { channel: "discord", state: "ready", lastEventAt: 5 } },
    ]);

    events.length = 0;
    channel = { ...channel, lastEventAt: 9 };
    index = { state: "idle", files: 2, chunks: 7 };
    await sampler.sample();
    // A newer last-event time alone is not a state change.
    expect(events).toEqual([
      { type: "index-changed", index: { state: "idle", files: 2, chunks: 7, rebuilding: false } },
    ]);
    sampler.close();
  });

  it("reads the rebuilding state and the last error of the index", () => {
    expect(indexFigures({ state: "rebuilding", files: 0, chunks: 0, lastError: "disk I/O error" })).toEqual({
      state: "rebuilding",
      files: 0,
      chunks: 0,
      rebuilding: true,
      lastError: "disk I/O error",
    });
  });

  it("reports no queue when there is none (no model configured)", async () => {
    const sampler = createStatusSampler({
      bus: createEventBus(),
      logger: silentLogger,
      sources: { index: async () => ({ state: "idle" }), channels: () => [] },
    });
    expect((await sampler.sample()).queue).toBeNull();
    sampler.close();
  });
});
