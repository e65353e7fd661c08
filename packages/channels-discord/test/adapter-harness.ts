import type { InboundMessage } from "@almanac/core";
import { createRecordingLogger, type LogEntry } from "@almanac/testkit";
import {
  type FakeDiscord,
  type FakeDiscordOptions,
  startFakeDiscord,
  waitUntil,
} from "@almanac/testkit/discord";
import { discordChannel } from "../src/descriptor.js";
import { createDiscordAdapter, type DiscordAdapter } from "../src/discord-adapter.js";
import type { DiscordAdapterOptions } from "../src/types.js";

/** A fake Discord and an adapter pointed at it, with everything the adapter delivered. */
export interface AdapterHarness {
  readonly fake: FakeDiscord;
  readonly adapter: DiscordAdapter;
  readonly inbound: InboundMessage[];
  /** The adapter's warn and error lines (debug is dropped: discord.js is chatty). */
  readonly logs: LogEntry[];
  /** Starts the adapter, collecting inbound messages. */
  start(): Promise<void>;
  /** Waits until an inbound message matching `match` was delivered, and returns it. */
  received(match: (message: InboundMessage) => boolean, what?: string): Promise<InboundMessage>;
  close(): Promise<void>;
}

/** Starts a fake Discord (short heartbeats) and creates an adapter for it; `start()` connects. */
export async function createAdapterHarness(
  options: {
    readonly fake?: FakeDiscordOptions;
    /** Settings as in the configuration file, over the fake's token and URL. */
    readonly settings?: { readonly token?: string };
    readonly adapter?: DiscordAdapterOptions;
  } = {},
): Promise<AdapterHarness> {
  const fake = await startFakeDiscord({ heartbeatIntervalMs: 300, ...options.fake });
  const inbound: InboundMessage[] = [];
  const logs: LogEntry[] = [];
  const settings = discordChannel.settings.parse({
    token: fake.token(),
    apiBaseUrl: fake.apiUrl,
    ...options.settings,
  });
  if (!discordChannel.enabled(settings)) throw new Error("the harness's settings do not enable Discord");
  const adapter = createDiscordAdapter(settings, {
    logger: createRecordingLogger(logs, { levels: ["warn", "error"] }),
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
