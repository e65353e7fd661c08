import { createServer } from "node:http";
import { createRecordingLogger } from "@almanac/testkit";
import { startFakeDingTalk, waitUntil } from "@almanac/testkit/dingtalk";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { dingtalkSettings, type Harness, startHarness } from "../test/adapter-harness.js";
import { createDingTalkAdapter, type DingTalkAdapter } from "./dingtalk-adapter.js";
import { isDingTalkError } from "./errors.js";

const cleanups: (() => Promise<void>)[] = [];

beforeEach(() => {
  vi.spyOn(console, "info").mockImplementation(() => {});
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.restoreAllMocks();
});

async function start(): Promise<Harness> {
  const harness = await startHarness();
  cleanups.push(() => harness.close());
  return harness;
}

function track(adapter: DingTalkAdapter): DingTalkAdapter {
  cleanups.push(() => adapter.stop());
  return adapter;
}

describe("DingTalk adapter: connection", () => {
  it("echoes SYSTEM pings, records the last event time and keeps the ticket out of debug logs", async () => {
    const { fake, adapter, logs } = await start();
    const connectLine = logs.find((entry) => entry.message?.includes("Connecting to dingtalk websocket"));
    expect(connectLine?.message).toMatch(/\?ticket=\*\*\*$/);
    const before = Date.now();
    await fake.ping();
    expect(adapter.status().lastEventAt).toBeGreaterThanOrEqual(before);
    expect(fake.connections()[0]?.subscriptions).toEqual([
      { type: "CALLBACK", topic: "/v1.0/im/bot/messages/get" },
    ]);
    expect(fake.problems()).toEqual([]);
  });

  it("reconnects after a SYSTEM disconnect and keeps receiving", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.disconnect();
    await waitUntil(() => adapter.status().state === "connecting", {
      message: "connecting after disconnect",
    });
    expect(adapter.status().detail).toContain("SYSTEM disconnect");
    await waitUntil(() => fake.connections().length === 2 && adapter.status().state === "ready", {
      message: "second connection",
    });
    const delivery = fake.sendRobotMessage({ conversation: "single", text: "after reconnect" });
    expect((await nextInbound(1)).id).toBe(delivery.msgId);
    await waitUntil(() => fake.acks().length === 1);
  });

  it("reconnects after the socket is cut and keeps receiving", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.dropConnection();
    await waitUntil(() => fake.connections().length === 2 && fake.isConnected(), {
      message: "second connection",
    });
    await waitUntil(() => adapter.status().state === "ready");
    fake.dropConnection();
    await waitUntil(() => fake.connections().length === 3 && fake.isConnected(), {
      message: "third connection",
    });
    fake.sendRobotMessage({ conversation: "group", text: "still there?" });
    expect(await nextInbound(1)).toMatchObject({ text: "still there?" });
    expect(fake.connections().filter((connection) => connection.closedAt === undefined)).toHaveLength(1);
  });

  it("notices a half-open connection within the keep-alive timeout, says reconnecting and delivers afterwards", async () => {
    const keepAlive = { keepAliveIntervalMs: 50, keepAliveTimeoutMs: 250 };
    const harness = await startHarness({ adapter: keepAlive });
    cleanups.push(() => harness.close());
    const { fake, adapter, logs, nextInbound } = harness;
    // A healthy connection answers the pings and is kept: several timeouts' worth of pings, still one connection.
    await waitUntil(() => fake.clientPings() >= 15, { message: "15 keep-alive pings" });
    expect(fake.connections()).toHaveLength(1);
    expect(adapter.status().state).toBe("ready");

    fake.stallConnection();
    const stalledAt = Date.now();
    const during = fake.sendRobotMessage({ conversation: "single", text: "sent into the stall" });
    const seen: { state: string; detail?: string; at: number }[] = [];
    await waitUntil(
      () => {
        const { state, detail } = adapter.status();
        seen.push({ state, ...(detail === undefined ? {} : { detail }), at: Date.now() });
        return fake.connections().length === 2 && fake.isConnected();
      },
      { intervalMs: 5, message: "a second connection after the stall" },
    );
    const reconnecting = seen.find((entry) => entry.state === "connecting");
    expect(reconnecting?.detail).toMatch(/^reconnecting: no frame or pong from the gateway for \d+ ms/);
    // Noticed after the timeout, and within the timeout plus one interval (plus slack for a loaded machine).
    const noticedAfterMs = (reconnecting?.at ?? Number.POSITIVE_INFINITY) - stalledAt;
    expect(noticedAfterMs).toBeLessThan(keepAlive.keepAliveTimeoutMs + keepAlive.keepAliveIntervalMs + 1_500);
    const silent = logs.find((entry) => entry.message === "DingTalk stream went silent; reconnecting");
    expect(silent?.fields.silentMs).toBeGreaterThanOrEqual(keepAlive.keepAliveTimeoutMs);

    expect((await nextInbound(1)).id).toBe(during.msgId);
    await waitUntil(() => adapter.status().state === "ready", { message: "ready again" });
    const after = fake.sendRobotMessage({ conversation: "group", text: "after the reconnect" });
    expect((await nextInbound(2)).id).toBe(after.msgId);
    await waitUntil(() => fake.acks().length === 2, { message: "both acked" });
    expect(fake.problems()).toEqual([]);
  });

  it("reports bad credentials as status error and stops trying", async () => {
    const fake = await startFakeDingTalk();
    cleanups.push(() => fake.close());
    const logs = createRecordingLogger();
    const adapter = track(
      createDingTalkAdapter(
        dingtalkSettings({
          clientId: fake.clientId,
          clientSecret: "wrong-secret",
          gatewayUrl: fake.url,
          apiBaseUrl: fake.url,
        }),
        { logger: logs },
      ),
    );
    await expect(adapter.start(() => {})).rejects.toSatisfy(
      (error) => isDingTalkError(error, "dingtalk.auth_failed") && error.category === "user",
    );
    const status = adapter.status();
    expect(status.state).toBe("error");
    expect(status.detail).toContain("authFailed");
    expect(status.detail).not.toContain("wrong-secret");
    // The SDK schedules its retry 1 s after a failed attempt; wait past it to see that no second attempt follows.
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(fake.rejections().filter((rejection) => rejection.route === "connections")).toHaveLength(1);
    expect(fake.connections()).toHaveLength(0);
    expect(JSON.stringify(logs.entries)).not.toContain("wrong-secret");
  });

  it("stays connecting with the reason while the gateway is unreachable", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", () => resolve()));
    const address = closed.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const adapter = track(
      createDingTalkAdapter(
        dingtalkSettings({
          clientId: "dingfakeclientid",
          clientSecret: "secret",
          gatewayUrl: `http://127.0.0.1:${port}`,
        }),
      ),
    );
    await adapter.start(() => {});
    expect(adapter.status()).toMatchObject({
      state: "connecting",
      detail: expect.stringContaining("connections/open request failed"),
    });
  });
});
