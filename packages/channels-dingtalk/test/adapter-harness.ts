// Test support only (imported by *.test.ts): a real adapter wired to the fake DingTalk from @almanac/testkit.
import type { InboundMessage } from "@almanac/core";
import { createRecordingLogger, type LogEntry } from "@almanac/testkit";
import {
  type FakeDingTalk,
  type FakeDingTalkOptions,
  startFakeDingTalk,
  waitUntil,
} from "@almanac/testkit/dingtalk";
import type { z } from "zod";
import { dingtalkChannel } from "../src/descriptor.js";
import { createDingTalkAdapter, type DingTalkAdapter } from "../src/dingtalk-adapter.js";
import type { DingTalkAdapterOptions } from "../src/types.js";

/** A started adapter, the fake it talks to, and what it received. */
export interface Harness {
  readonly fake: FakeDingTalk;
  readonly adapter: DingTalkAdapter;
  readonly inbound: InboundMessage[];
  readonly logs: LogEntry[];
  /** Waits for the `count`-th inbound message and returns it. */
  nextInbound(count: number): Promise<InboundMessage>;
  close(): Promise<void>;
}

/** Options of {@link startHarness}. */
export interface HarnessOptions {
  readonly fake?: FakeDingTalkOptions;
  /** Settings as in the configuration file, over the fake's credentials and URLs. */
  readonly settings?: Partial<z.input<typeof dingtalkChannel.settings>>;
  readonly adapter?: DingTalkAdapterOptions;
  /** Replaces the default handler (which records into `inbound`). */
  readonly onMessage?: (message: InboundMessage, harness: Harness) => void;
}

/** Starts the fake and an adapter connected to it; `close()` stops both. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const fake = await startFakeDingTalk(options.fake);
  const logs: LogEntry[] = [];
  const inbound: InboundMessage[] = [];
  const settings = dingtalkSettings({
    clientId: fake.clientId,
    clientSecret: fake.clientSecret,
    gatewayUrl: fake.url,
    apiBaseUrl: fake.url,
    oapiBaseUrl: fake.url,
    ...options.settings,
  });
  const adapter = createDingTalkAdapter(settings, {
    logger: createRecordingLogger(logs),
    ...options.adapter,
  });
  const harness: Harness = {
    fake,
    adapter,
    inbound,
    logs,
    nextInbound: (count) => waitUntil(() => inbound[count - 1], { message: `inbound message #${count}` }),
    close: async () => {
      await adapter.stop();
      await fake.close();
    },
  };
  try {
    await adapter.start((message) => {
      inbound.push(message);
      options.onMessage?.(message, harness);
    });
  } catch (error) {
    await harness.close();
    throw error;
  }
  return harness;
}

/** Settings of an enabled channel, validated by the configuration schema as the server does. */
export function dingtalkSettings(input: z.input<typeof dingtalkChannel.settings>) {
  const settings = dingtalkChannel.settings.parse(input);
  if (!dingtalkChannel.enabled(settings)) throw new Error("these settings do not enable DingTalk");
  return settings;
}
