import { formatSessionKey } from "@almanac/core";
import { waitUntil } from "@almanac/testkit/discord";
import { afterEach, describe, expect, it } from "vitest";
import { type AdapterHarness, createAdapterHarness } from "../test/adapter-harness.js";

let harness: AdapterHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function connected(options: Parameters<typeof createAdapterHarness>[0] = {}): Promise<AdapterHarness> {
  harness = await createAdapterHarness(options);
  await harness.start();
  return harness;
}

/** Dispatches a channel message mentioning the bot and waits until the adapter delivered it. */
async function roundTrip(current: AdapterHarness, content: string): Promise<void> {
  const event = current.fake.dispatchMessage({ where: "channel", content, mention: "user" });
  const message = await current.received((candidate) => candidate.id === event.d.id, content);
  expect(message.text).toBe(content);
}

describe("staying connected", () => {
  it("resumes after close 4000, reports connecting then ready, and keeps delivering", async () => {
    const current = await connected();
    expect(current.adapter.status().state).toBe("ready");
    current.fake.dropConnection(4000);
    await waitUntil(() => current.adapter.status().state === "connecting", { what: "state connecting" });
    await waitUntil(() => current.fake.resumes() === 1 && current.adapter.status().state === "ready", {
      what: "a resume",
    });
    await roundTrip(current, "after resume");
    expect(current.fake.identifies()).toBe(1);
  });

  it("replays what was said while the connection was down", async () => {
    const current = await connected();
    current.fake.dropConnection(4000);
    const missed = current.fake.dispatchMessage({ where: "dm", content: "said during the outage" });
    const message = await current.received((candidate) => candidate.id === missed.d.id, "the missed message");
    expect(message.text).toBe("said during the outage");
    expect(current.fake.resumes()).toBe(1);
  });

  it("resumes after an abrupt close without a close frame (1006)", async () => {
    const current = await connected();
    current.fake.dropConnection(1006);
    await waitUntil(() => current.fake.resumes() === 1, { what: "a resume after 1006" });
    await roundTrip(current, "after abrupt close");
  });

  it("identifies anew when Discord refuses the resume (op 9), and keeps delivering", async () => {
    const current = await connected();
    current.fake.invalidateNextResume();
    current.fake.dropConnection(4000);
    // discord.js throttles IDENTIFY to one per 5 s, so the new session takes a few seconds.
    await waitUntil(() => current.fake.identifies() === 2 && current.adapter.status().state === "ready", {
      what: "a second IDENTIFY",
      timeoutMs: 15_000,
    });
    await roundTrip(current, "after new session");
    expect(current.fake.resumes()).toBe(0);
  }, 30_000);

  it("waits out a 429 on posting, logs the rate limit, and still delivers the message", async () => {
    const current = await connected();
    current.fake.rateLimitNext("POST /channels/:id/messages", 0.3);
    const sessionKey = formatSessionKey({
      channel: "discord",
      account: "default",
      kind: "group",
      id: current.fake.world.ids.channel,
    });
    await current.adapter.send({ sessionKey, text: "patience" });
    const [hit] = current.fake.rateLimits();
    const [sent] = current.fake.sent();
    expect(sent?.content).toBe("patience");
    expect((sent?.at ?? 0) - (hit?.at ?? 0)).toBeGreaterThanOrEqual(250);
    expect(current.logs).toContainEqual(
      expect.objectContaining({ level: "warn", message: expect.stringMatching(/rate limited/) }),
    );
  });

  it("retries a login that failed for a passing reason and then delivers", async () => {
    harness = await createAdapterHarness();
    const current = harness;
    // discord.js retries a 5xx three times itself; the fourth failure fails the login.
    current.fake.failNext("GET /gateway/bot", 503, 4);
    await current.start();
    expect(current.adapter.status()).toMatchObject({
      state: "connecting",
      detail: expect.stringMatching(/retrying/),
    });
    await waitUntil(() => current.adapter.status().state === "ready", { what: "ready after retry" });
    await roundTrip(current, "after retry");
  });

  it("lets stop() end a start() that is still connecting", async () => {
    harness = await createAdapterHarness();
    const starting = harness.start();
    await harness.adapter.stop();
    await expect(starting).resolves.toBeUndefined();
    expect(harness.adapter.status().state).toBe("disabled");
    await waitUntil(() => harness?.fake.activeConnections() === 0, { what: "no gateway connection" });
  });

  it("stops cleanly: status disabled and the gateway connection closed", async () => {
    const current = await connected();
    await current.adapter.stop();
    expect(current.adapter.status()).toMatchObject({ state: "disabled" });
    await waitUntil(() => current.fake.activeConnections() === 0, { what: "the connection to close" });
    await expect(
      current.adapter.send({ sessionKey: "discord:default:group:1", text: "x" }),
    ).rejects.toMatchObject({
      code: "discord.not_started",
    });
  });
});

describe("failing for good", () => {
  it("reports an invalid token as error with a clear detail and does not retry", async () => {
    harness = await createAdapterHarness({ settings: { token: "not.the.token" } });
    const current = harness;
    await expect(current.start()).rejects.toMatchObject({ code: "discord.auth_failed" });
    expect(current.adapter.status()).toMatchObject({
      state: "error",
      detail: expect.stringMatching(/token/),
    });
    const requestsAfterFailure = current.fake.requests().length;
    // Ten retry delays of the harness (50 ms): a retry loop would have shown up by now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(current.fake.requests().length).toBe(requestsAfterFailure);
    expect(current.fake.identifyAttempts()).toHaveLength(0);
  });

  it("turns a gateway close 4004 (token revoked while running) into error without reconnecting", async () => {
    const current = await connected();
    current.fake.revokeToken();
    current.fake.dropConnection(4000);
    await waitUntil(() => current.adapter.status().state === "error", { what: "state error" });
    expect(current.adapter.status().detail).toMatch(/4004/);
    const attempts = current.fake.identifyAttempts().length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(current.fake.identifyAttempts()).toHaveLength(attempts);
    expect(current.fake.activeConnections()).toBe(0);
  });

  it("explains a refused Message Content intent (close 4014)", async () => {
    harness = await createAdapterHarness({ fake: { privilegedIntents: false } });
    await expect(harness.start()).rejects.toMatchObject({ code: "discord.gateway_refused" });
    expect(harness.adapter.status()).toMatchObject({
      state: "error",
      detail: expect.stringMatching(/Message Content Intent/),
    });
  });
});
