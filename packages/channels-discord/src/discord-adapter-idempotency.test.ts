import { formatSessionKey } from "@almanac/core";
import { MAX_NONCE_LENGTH } from "@almanac/testkit/discord";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AdapterHarness, createAdapterHarness } from "../test/adapter-harness.js";
import { createDiscordAdapter } from "./discord-adapter.js";

let harness: AdapterHarness;

beforeEach(async () => {
  harness = await createAdapterHarness();
  await harness.start();
});
afterEach(async () => {
  await harness.close();
});

/** Three paragraphs of ~1,500 characters: three messages on Discord. */
const LONG_TEXT = ["a", "b", "c"].map((letter) => `${letter} `.repeat(750).trim()).join("\n\n");

const ownerDm = () =>
  formatSessionKey({ channel: "discord", account: "default", kind: "dm", id: harness.fake.world.user.id });

/** The bodies of every message-create request the fake received. */
const createBodies = () =>
  harness.fake
    .requests()
    .filter((request) => request.method === "POST" && /^\/channels\/\d+\/messages$/.test(request.path))
    .map((request) => request.body as Record<string, unknown>);

describe("sending with an idempotency key", () => {
  it("says its sends are idempotent", () => {
    expect(harness.adapter.idempotentSends).toBe(true);
  });

  it("posts each part once however often the same key is sent, and again for another key", async () => {
    const { adapter, fake } = harness;
    const message = { sessionKey: ownerDm(), text: LONG_TEXT, idempotencyKey: "TABCDE-1796520000000" };
    await adapter.send(message);
    expect(fake.sent()).toHaveLength(3);
    await adapter.send(message);
    expect(fake.sent()).toHaveLength(3);
    const nonces = createBodies().map((body) => body.nonce);
    expect(createBodies().every((body) => body.enforce_nonce === true)).toBe(true);
    expect(nonces.every((nonce) => typeof nonce === "string" && nonce.length <= MAX_NONCE_LENGTH)).toBe(true);
    // Each part its own nonce; the second send repeated the first's.
    expect(new Set(nonces.slice(0, 3)).size).toBe(3);
    expect(nonces.slice(3)).toEqual(nonces.slice(0, 3));

    await adapter.send({ ...message, idempotencyKey: "TABCDE-1796520060000" });
    expect(fake.sent()).toHaveLength(6);
  });

  it("sends no nonce without a key, so the same text twice is two messages", async () => {
    const { adapter, fake } = harness;
    await adapter.send({ sessionKey: ownerDm(), text: "hello" });
    await adapter.send({ sessionKey: ownerDm(), text: "hello" });
    expect(fake.sent()).toHaveLength(2);
    expect(createBodies().some((body) => "nonce" in body || "enforce_nonce" in body)).toBe(false);
  });

  it("after a send cut off while Discord created its first part, a new adapter sending it again completes it once", async () => {
    const { fake } = harness;
    const message = { sessionKey: ownerDm(), text: LONG_TEXT, idempotencyKey: "TQWERT-1796520000000" };
    const held = fake.holdNextMessageResponse();
    const cut = harness.adapter.send(message).catch(() => {});
    await held.message;
    // The server dies here: Discord has part one, the adapter never heard so.
    await harness.adapter.stop();
    held.release();
    await cut;
    expect(fake.sent()).toHaveLength(1);

    const restarted = createDiscordAdapter({ token: fake.token(), apiBaseUrl: fake.apiUrl });
    await restarted.start(() => {});
    try {
      await restarted.send(message);
    } finally {
      await restarted.stop();
    }
    expect(fake.sent().map((sent) => sent.content[0])).toEqual(["a", "b", "c"]);
  });
});
