import type { ChannelStatus, Logger } from "@almanac/core";
import type { EventBus, IndexFigures, QueueFigures } from "./event-bus.js";

/** Where the sampler reads the state of the services that do not publish their own changes. */
export interface StatusSources {
  /** Absent when no model is configured (no summarizer queue). */
  readonly queue?: () => Promise<QueueFigures>;
  /** The index status as `GET /api/memory/index` reports it. */
  readonly index: () => Promise<Record<string, unknown>>;
  readonly channels: () => readonly ChannelStatus[];
}

/** The state of the queue, the index and the channels at one moment (the `snapshot` event carries it). */
export interface StatusFigures {
  readonly queue: QueueFigures | null;
  readonly index: IndexFigures;
  readonly channels: readonly ChannelStatus[];
}

/** Samples the services' state while someone listens and publishes what changed. */
export interface StatusSampler {
  /** Reads every source now, publishes the differences from the last reading, and returns the reading. */
  sample(): Promise<StatusFigures>;
  /** Stops sampling for good. */
  close(): void;
}

/** Options of {@link createStatusSampler}. */
export interface StatusSamplerOptions {
  readonly bus: EventBus;
  readonly sources: StatusSources;
  /** How often to sample while at least one listener is subscribed. Default 1 000 ms. */
  readonly intervalMs?: number;
  readonly logger: Logger;
}

/** The index status reduced to what the console shows live. */
export function indexFigures(status: Record<string, unknown>): IndexFigures {
  const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0);
  const state = typeof status.state === "string" ? status.state : "unknown";
  return {
    state,
    files: count(status.files),
    chunks: count(status.chunks),
    rebuilding: state === "rebuilding",
    ...(typeof status.lastError === "string" ? { lastError: status.lastError } : {}),
  };
}

/** What makes a channel's state differ for the console: the last event time alone does not. */
function channelKey(status: ChannelStatus): string {
  return JSON.stringify([status.state, status.detail ?? null]);
}

/**
 * The queue, the index and the channels keep their state to themselves; this reads it every `intervalMs`
 * while the bus has listeners (never otherwise: an idle server does no work for the live console) and
 * publishes `queue-changed`, `index-changed` and `channel-changed` when a reading differs from the last.
 */
export function createStatusSampler(options: StatusSamplerOptions): StatusSampler {
  const { bus, sources } = options;
  const intervalMs = options.intervalMs ?? 1_000;
  const logger = options.logger.child({ component: "events" });
  let lastQueue: string | undefined;
  let lastIndex: string | undefined;
  const lastChannels = new Map<string, string>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<StatusFigures> | undefined;
  let closed = false;

  const read = async (): Promise<StatusFigures> => {
    const [queue, index] = await Promise.all([sources.queue?.() ?? null, sources.index()]);
    const figures: StatusFigures = { queue, index: indexFigures(index), channels: sources.channels() };
    const queueKey = JSON.stringify(figures.queue);
    if (lastQueue !== undefined && queueKey !== lastQueue && figures.queue !== null)
      bus.publish({ type: "queue-changed", queue: figures.queue });
    lastQueue = queueKey;
    const indexKey = JSON.stringify(figures.index);
    if (lastIndex !== undefined && indexKey !== lastIndex)
      bus.publish({ type: "index-changed", index: figures.index });
    lastIndex = indexKey;
    for (const channel of figures.channels) {
      const key = channelKey(channel);
      const previous = lastChannels.get(channel.channel);
      if (previous !== undefined && previous !== key) bus.publish({ type: "channel-changed", channel });
      lastChannels.set(channel.channel, key);
    }
    return figures;
  };
  // One reading at a time: a slow index query must not pile readings up.
  const sample = (): Promise<StatusFigures> => {
    running ??= read().finally(() => {
      running = undefined;
    });
    return running;
  };
  const tick = () => {
    sample().catch((error: unknown) =>
      logger.warn({ err: error }, "could not read the status for live events"),
    );
  };
  const stopWatching = bus.onListenerCount((count) => {
    if (count > 0 && timer === undefined && !closed) {
      timer = setInterval(tick, intervalMs);
      timer.unref();
    } else if (count === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  });
  return {
    sample,
    close() {
      closed = true;
      stopWatching();
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    },
  };
}
