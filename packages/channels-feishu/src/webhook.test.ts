import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { buildUrlVerification } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../test/adapter-harness.js";
import type { FeishuAdapter } from "./feishu-adapter.js";

const encryptKey = "kE9s-encrypt-key";
const verificationToken = "vT-verification-token";

let harness: Harness | undefined;
let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await harness?.close();
  harness = undefined;
});

/** Serves the adapter's webhook handler the way the server's route does: raw body bytes and headers. */
async function serve(adapter: FeishuAdapter): Promise<string> {
  server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(Buffer.from(chunk));
    const answer = await adapter.handleWebhook({ headers: request.headers, rawBody: Buffer.concat(chunks) });
    response.writeHead(answer.status, { "content-type": "application/json" });
    response.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/channels/feishu/webhook`;
}

const startWebhook = async (secrets: { encryptKey?: string; verificationToken?: string }) => {
  harness = await startHarness({ settings: { mode: "webhook", ...secrets } });
  return { ...harness, url: await serve(harness.adapter) };
};

describe("FeishuAdapter.handleWebhook", () => {
  it("decrypts a signed event, checks its token and hands the message over", async () => {
    const { fake, url, inbound } = await startWebhook({ encryptKey, verificationToken });
    const event = fake.messageEvent({ chatType: "group", text: "via webhook", mentionBot: true });
    const response = await fake.postWebhook(url, event.envelope, { encryptKey, verificationToken });
    expect(response).toMatchObject({ status: 200, body: {} });
    expect(response.sentBody).not.toContain("via webhook");
    expect(inbound).toMatchObject([
      { id: event.messageId, text: "via webhook", mentioned: true, raw: { eventId: event.eventId } },
    ]);
  });

  it("answers 401 to a bad signature and processes nothing", async () => {
    const { fake, url, inbound } = await startWebhook({ encryptKey, verificationToken });
    const event = fake.messageEvent({ chatType: "p2p", text: "forged" });
    const response = await fake.postWebhook(url, event.envelope, {
      encryptKey,
      verificationToken,
      badSignature: true,
    });
    expect(response).toMatchObject({
      status: 401,
      body: { error: { code: "feishu.webhook_signature_invalid" } },
    });
    expect(inbound).toEqual([]);
  });

  it("answers 401 to a correctly signed event whose timestamp is outside five minutes (a replay)", async () => {
    const { fake, url, inbound } = await startWebhook({ encryptKey, verificationToken });
    const now = Math.floor(Date.now() / 1000);
    for (const timestamp of [String(now - 10 * 60), "1000000000", String(now + 10 * 60), "not-a-time"]) {
      const event = fake.messageEvent({ chatType: "p2p", text: "replayed" });
      const response = await fake.postWebhook(url, event.envelope, {
        encryptKey,
        verificationToken,
        timestamp,
      });
      expect(response, timestamp).toMatchObject({
        status: 401,
        body: { error: { code: "feishu.webhook_stale" } },
      });
    }
    const fresh = fake.messageEvent({ chatType: "p2p", text: "fresh" });
    const ok = await fake.postWebhook(url, fresh.envelope, {
      encryptKey,
      verificationToken,
      timestamp: String(now - 60),
    });
    expect(ok.status).toBe(200);
    expect(inbound.map((message) => message.text)).toEqual(["fresh"]);
  });

  it("answers 401 to an event without a signature when an encrypt key is set", async () => {
    const { fake, url, inbound } = await startWebhook({ encryptKey });
    const event = fake.messageEvent({ chatType: "p2p", text: "unsigned" });
    const signed = await fake.postWebhook(url, event.envelope, { encryptKey });
    expect(signed.status).toBe(200);
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: signed.sentBody,
    });
    expect(response.status).toBe(401);
    expect(inbound).toHaveLength(1);
  });

  it("answers the encrypted url_verification challenge", async () => {
    const { fake, url } = await startWebhook({ encryptKey, verificationToken });
    const response = await fake.postWebhook(url, buildUrlVerification("challenge-42"), {
      encryptKey,
      verificationToken,
    });
    expect(response).toMatchObject({ status: 200, body: { challenge: "challenge-42" } });
  });

  it("checks the verification token of plain requests when no encrypt key is set", async () => {
    const { fake, url, inbound } = await startWebhook({ verificationToken });
    const challenge = await fake.postWebhook(url, buildUrlVerification("c-1"), { verificationToken });
    expect(challenge.body).toEqual({ challenge: "c-1" });
    const wrongChallenge = await fake.postWebhook(url, buildUrlVerification("c-2"), {
      verificationToken: "guess",
    });
    expect(wrongChallenge.status).toBe(401);
    const event = fake.messageEvent({ chatType: "p2p", text: "plain" });
    expect((await fake.postWebhook(url, event.envelope, { verificationToken: "guess" })).status).toBe(401);
    expect(inbound).toEqual([]);
    expect((await fake.postWebhook(url, event.envelope, { verificationToken })).status).toBe(200);
    expect(inbound.map((message) => message.text)).toEqual(["plain"]);
  });

  it("rejects an encrypted body it cannot open and a body that is not JSON", async () => {
    const { fake, url, inbound } = await startWebhook({ verificationToken });
    const event = fake.messageEvent({ chatType: "p2p", text: "secret" });
    const encrypted = await fake.postWebhook(url, event.envelope, {
      encryptKey: "someone-elses-key",
      verificationToken,
    });
    expect(encrypted).toMatchObject({ status: 400, body: { error: { code: "feishu.webhook_encrypted" } } });
    const garbage = await fetch(url, { method: "POST", body: "not json" });
    expect(garbage.status).toBe(400);
    expect(inbound).toEqual([]);
  });

  it("acknowledges events it does not handle", async () => {
    const { fake, url, inbound } = await startWebhook({ encryptKey });
    const other = {
      schema: "2.0",
      header: { event_id: "e1", event_type: "im.chat.member.bot.added_v1" },
      event: {},
    };
    expect((await fake.postWebhook(url, other, { encryptKey })).status).toBe(200);
    expect(inbound).toEqual([]);
  });

  it("is not served in websocket mode", async () => {
    harness = await startHarness();
    const answer = await harness.adapter.handleWebhook({ headers: {}, rawBody: "{}" });
    expect(answer.status).toBe(404);
  });
});
