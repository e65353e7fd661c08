import type { InboundMessage } from "@almanac/core";
import { type FakeFeishu, type FakeFeishuOptions, startFakeFeishu, waitUntil } from "@almanac/testkit/feishu";
import type { z } from "zod";
import { feishuChannel } from "../src/descriptor.js";
import { createFeishuAdapter, type FeishuAdapter } from "../src/feishu-adapter.js";
import type { FeishuAdapterOptions } from "../src/types.js";

/** A fake Feishu, an adapter pointed at it, and what the adapter delivered. */
export interface Harness {
  readonly fake: FakeFeishu;
  readonly adapter: FeishuAdapter;
  readonly inbound: InboundMessage[];
  /** Every wait the adapter asked for between retries, in ms (the injected sleep returns at once). */
  readonly sleeps: number[];
  waitForInbound(count: number): Promise<InboundMessage[]>;
  close(): Promise<void>;
}

/** Options of {@link startHarness}. */
export interface HarnessOptions {
  readonly fake?: FakeFeishuOptions;
  /** Settings as in the configuration file, over the fake's app id, secret and URL. */
  readonly settings?: Partial<z.input<typeof feishuChannel.settings>>;
  readonly options?: FeishuAdapterOptions;
  /** Starts the adapter (default true). */
  readonly start?: boolean;
}

/** Starts a fake platform and an adapter in front of it. Always `close()` it (e.g. in afterEach). */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const fake = await startFakeFeishu(options.fake);
  const inbound: InboundMessage[] = [];
  const sleeps: number[] = [];
  const settings = feishuChannel.settings.parse({
    appId: fake.appId,
    appSecret: fake.appSecret,
    domain: fake.baseUrl,
    ...options.settings,
  });
  if (!feishuChannel.enabled(settings)) throw new Error("the harness's settings do not enable Feishu");
  const adapter = createFeishuAdapter(settings, {
    connectTimeoutMs: 5000,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...options.options,
  });
  const harness: Harness = {
    fake,
    adapter,
    inbound,
    sleeps,
    async waitForInbound(count) {
      await waitUntil(() => inbound.length >= count, { what: `${count} inbound message(s)` });
      return inbound;
    },
    async close() {
      await adapter.stop();
      await fake.close();
    },
  };
  if (options.start ?? true) {
    try {
      await adapter.start((message) => inbound.push(message));
    } catch (error) {
      await harness.close();
      throw error;
    }
  }
  return harness;
}
