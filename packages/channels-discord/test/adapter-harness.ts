import type { InboundMessage, Logger } from "@almanac/core";
import {
  type FakeDiscord,
  type FakeDiscordOptions,
  startFakeDiscord,
  waitUntil,
} from "@almanac/testkit/discord";
import { createDiscordAdapter, type DiscordAdapter } from "../src/discord-adapter.js";
import type { DiscordAdapterConfig } from "../src/types.js";

/** One line a {@link recordingLogger} kept. */
export interface LogLine {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

/** A logger that keeps warn and error lines (debug is dropped: discord.js is chatty). */
export function recordingLogger(lines: LogLine[]): Logger {
  const keep =
    (level: LogLine["level"]) =>
    (fields: Record<string, unknown>, message = ""): void => {
      if (level === "warn" || level === "error") lines.push({ level, message, fields });
    };
  const logger: Logger = {
    debug: keep("debug"),
    info: keep("info"),
    warn: keep("warn"),
    error: keep("error"),
    child: () => logger,
  };
  return logger;
}

/** A fake Discord and an adapter pointed at it, with everything the adapter delivered. */
export interface AdapterHarness {
  readonly fake: FakeDiscord;
  readonly adapter: DiscordAdapter;
  readonly inbound: InboundMessage[];
  readonly logs: LogLine[];
  /** Starts the adapter, collecting inbound messages. */
  start(): Promise<void>;
  /** Waits until an inbound message matching `match` was delivered, and returns it. */
  received(match: (message: InboundMessage) => boolean, what?: string): Promise<InboundMessage>;
  close(): Promise<void>;
}

/** Starts a fake Discord (short heartbeats) and creates an adapter for it; `start()` connects. */
export async function createAdapterHarness(
  options: { readonly fake?: FakeDiscordOptions; readonly adapter?: Partial<DiscordAdapterConfig> } = {},
): Promise<AdapterHarness> {
  const fake = await startFakeDiscord({ heartbeatIntervalMs: 300, ...options.fake });
  const inbound: InboundMessage[] = [];
  const logs: LogLine[] = [];
  const adapter = createDiscordAdapter({
    token: fake.token(),
    apiBaseUrl: fake.apiUrl,
    logger: recordingLogger(logs),
    typingIntervalMs: 100,
    retryDelayMs: 50,
    ...options.adapter,
  });
  return {
    fake,
    adapter,
    inbound,
    logs,
    start: () => adapter.start((message) => inbound.push(message)),
    received: (match, what = "an inbound message") =>
      waitUntil(() => inbound.find(match), { what, timeoutMs: 10_000 }),
    async close() {
      await adapter.stop();
      await fake.close();
    },
  };
}
