import { lastUserText, script } from "@almanac/testkit";
import { type FakeFeishu, startFakeFeishu } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "./server-process.js";
import { startTestServer, type TestServer } from "./test-server.js";

let feishu: FakeFeishu | undefined;
let running: TestServer | undefined;

/** The Markdown text of a post message the bot sent (one `md` element per paragraph list). */
function postText(content: unknown): string {
  return JSON.stringify(content);
}

async function start(mode: "websocket" | "webhook"): Promise<{ server: TestServer; fake: FakeFeishu }> {
  const fake = await startFakeFeishu();
  const server = await startTestServer({
    env: {
      // Replies sent whole: this file checks the transport and the gate; streamed cards are feishu-attachments.e2e.
      ALMANAC_STREAM_REPLIES: "none",
      ALMANAC_FEISHU_APP_ID: fake.appId,
      ALMANAC_FEISHU_APP_SECRET: fake.appSecret,
      ALMANAC_FEISHU_DOMAIN: fake.baseUrl,
      ALMANAC_FEISHU_MODE: mode,
      ...(mode === "webhook"
        ? { ALMANAC_FEISHU_ENCRYPT_KEY: "enc-key-123", ALMANAC_FEISHU_VERIFICATION_TOKEN: "verify-token-123" }
        : {}),
      ALMANAC_FEISHU_ALLOW_FROM: "ou_user_1",
      ALMANAC_FEISHU_GROUP_POLICY: "open",
    },
  });
  server.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
  feishu = fake;
  running = server;
  return { server, fake };
}

afterEach(async () => {
  await running?.close();
  running = undefined;
  await feishu?.close();
  feishu = undefined;
});

describe("Feishu through the real server", () => {
  it("long connection: answers a DM, gates group messages on a mention, and refuses a stranger", async () => {
    const { fake, server } = await start("websocket");
    await fake.waitForConnection(1, 10_000);
    fake.sendEvent({ chatType: "p2p", text: "hi there", sender: { openId: "ou_stranger" } });
    fake.sendEvent({ chatType: "p2p", text: "hi there" });
    const [dm] = await fake.waitForSent(1, 10_000);
    expect(postText(dm?.content)).toContain("echo: hi there");
    fake.sendEvent({ chatType: "group", text: "no mention here" });
    const asked = fake.sendEvent({ chatType: "group", text: "what now?", mentionBot: true });
    const sent = await fake.waitForSent(2, 10_000);
    expect(sent[1]).toMatchObject({ kind: "reply" });
    expect(postText(sent[1]?.content)).toContain("echo: what now?");
    expect(JSON.stringify(asked)).toContain(String(sent[1]?.replyTo));
    expect(server.llm.chatRequests()).toHaveLength(2);
  });

  it("long connection: keeps answering after the platform drops the connection", async () => {
    const { fake } = await start("websocket");
    await fake.waitForConnection(1, 10_000);
    fake.dropConnection();
    await fake.waitForConnection(2, 20_000);
    fake.sendEvent({ chatType: "p2p", text: "after the drop" });
    const [reply] = await fake.waitForSent(1, 10_000);
    expect(postText(reply?.content)).toContain("echo: after the drop");
  }, 40_000);

  it("webhook: processes a signed event, answers url_verification, and rejects a bad signature with 401", async () => {
    const { fake, server } = await start("webhook");
    const url = `${server.server.url}/channels/feishu/webhook`;
    const options = { encryptKey: "enc-key-123", verificationToken: "verify-token-123" };
    const challenge = await fake.postWebhook(
      url,
      { type: "url_verification", challenge: "abc-123", token: "verify-token-123" },
      options,
    );
    expect(challenge).toMatchObject({ status: 200, body: { challenge: "abc-123" } });
    const forged = await fake.postWebhook(
      url,
      fake.messageEvent({ chatType: "p2p", text: "forged" }).envelope,
      { ...options, badSignature: true },
    );
    expect(forged.status).toBe(401);
    const good = await fake.postWebhook(
      url,
      fake.messageEvent({ chatType: "p2p", text: "signed and sealed" }).envelope,
      options,
    );
    expect(good.status).toBe(200);
    const [reply] = await fake.waitForSent(1, 10_000);
    expect(postText(reply?.content)).toContain("echo: signed and sealed");
    await waitFor(() => server.llm.chatRequests().length === 1, 2000, "one model call");
    expect(JSON.stringify(server.llm.chatRequests())).not.toContain("forged");
  });
});
