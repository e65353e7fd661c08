import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as lark from "@larksuiteoapi/node-sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildUrlVerification } from "./events.js";
import { type FakeFeishu, startFakeFeishu, waitUntil } from "./fake-feishu.js";

// The SDK maps loggerLevel 0 (fatal) to info, so silence it with a logger instead.
const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };

let fake: FakeFeishu;
const closers: (() => unknown)[] = [];

beforeEach(async () => {
  fake = await startFakeFeishu();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await fake.close();
});

const client = (appSecret = fake.appSecret) =>
  new lark.Client({
    appId: fake.appId,
    appSecret,
    domain: fake.baseUrl,
    cache: new lark.DefaultCache(),
    logger: quiet,
  });

/** The HTTP answer behind an error the SDK threw (it rethrows axios errors). */
function httpFailure(error: unknown): { status: unknown; data: unknown; reset: unknown } {
  const response: unknown = Reflect.get(Object(error), "response");
  return {
    status: Reflect.get(Object(response), "status"),
    data: Reflect.get(Object(response), "data"),
    reset: Reflect.get(Object(Reflect.get(Object(response), "headers")), "x-ogw-ratelimit-reset"),
  };
}

describe("REST API through the real SDK", () => {
  it("issues a tenant token and records a sent post with its parsed content", async () => {
    const content = JSON.stringify({ zh_cn: { title: "", content: [[{ tag: "md", text: "**hi**" }]] } });
    const result = await client().im.message.create({
      params: { receive_id_type: "chat_id" },
      data: { receive_id: "oc_group_1", msg_type: "post", content },
    });
    expect(result.code).toBe(0);
    expect(result.data?.message_id).toMatch(/^om_/);
    expect(fake.sent()).toMatchObject([
      { kind: "create", chatId: "oc_group_1", receiveIdType: "chat_id", msgType: "post" },
    ]);
    expect(fake.sent()[0]?.content).toEqual({
      zh_cn: { title: "", content: [[{ tag: "md", text: "**hi**" }]] },
    });
    const authorizations = fake.requests().map((request) => request.authorization ?? "none");
    expect(authorizations[1]).toMatch(/^Bearer t-/);
  });

  it("refuses calls without a valid tenant token", async () => {
    const response = await fetch(`${fake.baseUrl}/open-apis/bot/v3/info`, {
      headers: { authorization: "Bearer t-forged" },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 99991663 });
    await expect(
      client("wrong-secret").request({ method: "GET", url: "/open-apis/bot/v3/info" }),
    ).rejects.toThrow(/app secret invalid|10014/);
  });

  it("answers bot info with the bot's open_id", async () => {
    const info: unknown = await client().request({ method: "GET", url: "/open-apis/bot/v3/info" });
    expect(info).toMatchObject({ code: 0, bot: { open_id: fake.botOpenId } });
  });

  it("threads replies to the message and records reply_in_thread", async () => {
    const event = fake.messageEvent({ chatType: "group", text: "question" });
    await client().im.message.reply({
      path: { message_id: event.messageId },
      data: { msg_type: "text", content: JSON.stringify({ text: "answer" }), reply_in_thread: true },
    });
    expect(fake.sent()).toMatchObject([
      {
        kind: "reply",
        replyTo: event.messageId,
        chatId: event.chatId,
        replyInThread: true,
        content: { text: "answer" },
      },
    ]);
  });

  it("rejects a post body over 30 KB with code 230025 and records nothing", async () => {
    const content = JSON.stringify({ zh_cn: { content: [[{ tag: "md", text: "x".repeat(31_000) }]] } });
    const error = await client()
      .im.message.create({
        params: { receive_id_type: "chat_id" },
        data: { receive_id: "oc_group_1", msg_type: "post", content },
      })
      .catch((caught: unknown) => caught);
    expect(httpFailure(error)).toMatchObject({ status: 400, data: { code: 230025 } });
    expect(fake.sent()).toEqual([]);
  });

  it("answers a triggered rate limit with 429, code 99991400 and x-ogw-ratelimit-reset, then recovers", async () => {
    fake.rateLimitNext({ resetSeconds: 3 });
    const send = () =>
      client().im.message.create({
        params: { receive_id_type: "open_id" },
        data: { receive_id: "ou_user_1", msg_type: "text", content: JSON.stringify({ text: "hi" }) },
      });
    const error = await send().catch((caught: unknown) => caught);
    expect(httpFailure(error)).toEqual({
      status: 429,
      data: { code: 99991400, msg: "request trigger frequency limit" },
      reset: "3",
    });
    expect((await send()).code).toBe(0);
    expect(fake.sent()).toHaveLength(1);
  });

  it("returns a scripted business error with HTTP 200, which the SDK returns instead of throwing", async () => {
    fake.failNext({ code: 230002, msg: "The bot can not be outside the group." });
    const result = await client().im.message.create({
      params: { receive_id_type: "chat_id" },
      data: { receive_id: "oc_other", msg_type: "text", content: JSON.stringify({ text: "hi" }) },
    });
    expect(result).toMatchObject({ code: 230002, msg: "The bot can not be outside the group." });
    expect(fake.sent()).toEqual([]);
  });

  it("deduplicates sends that repeat a uuid", async () => {
    const send = () =>
      client().im.message.create({
        params: { receive_id_type: "chat_id" },
        data: { receive_id: "oc_group_1", msg_type: "text", content: '{"text":"once"}', uuid: "u-1" },
      });
    const first = await send();
    const second = await send();
    expect(second.data?.message_id).toBe(first.data?.message_id);
    expect(fake.sent()).toHaveLength(1);
  });

  it("adds and removes reactions", async () => {
    const added = await client().im.messageReaction.create({
      path: { message_id: "om_1" },
      data: { reaction_type: { emoji_type: "Typing" } },
    });
    const reactionId = added.data?.reaction_id ?? "";
    await client().im.messageReaction.delete({ path: { message_id: "om_1", reaction_id: reactionId } });
    expect(fake.reactions()).toEqual([{ messageId: "om_1", reactionId, emojiType: "Typing", deleted: true }]);
  });
});

describe("long connection through the real WSClient", () => {
  const connect = async (appSecret = fake.appSecret) => {
    const received: unknown[] = [];
    const errors: Error[] = [];
    const dispatcher = new lark.EventDispatcher({ logger: quiet }).register({
      "im.message.receive_v1": async (data) => {
        received.push(data);
        return { handled: true };
      },
    });
    const ws = new lark.WSClient({
      appId: fake.appId,
      appSecret,
      domain: fake.baseUrl,
      logger: quiet,
      onError: (error) => errors.push(error),
    });
    closers.push(() => ws.close({ force: true }));
    await ws.start({ eventDispatcher: dispatcher });
    return { received, errors };
  };

  it("delivers events split into several frames and records the acks after the handler resolved", async () => {
    const { received } = await connect();
    await fake.waitForConnection();
    const event = fake.sendEvent({ chatType: "group", text: "hello", mentionBot: true }, { parts: 3 });
    const acks = await fake.waitForAcks(1);
    expect(acks[0]).toMatchObject({
      frameMessageId: event.frameMessageId,
      code: 200,
      data: { handled: true },
    });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      event_id: event.eventId,
      message: { message_id: event.messageId, content: JSON.stringify({ text: "@_user_1 hello" }) },
    });
  });

  it("answers pings with pongs and lets the client reconnect after a drop", async () => {
    const { received } = await connect();
    await fake.waitForConnection();
    await waitUntil(() => fake.pingCount() >= 1, { what: "a ping" });
    fake.dropConnection();
    await fake.waitForConnection(2);
    fake.sendEvent({ chatType: "p2p", text: "after the drop" });
    await waitUntil(() => received.length === 1, { what: "the event after reconnecting" });
  });

  it("refuses discovery with a wrong secret so the client reports an error", async () => {
    const { errors } = await connect("wrong-secret");
    await waitUntil(() => errors.length === 1, { what: "onError" });
    expect(errors[0]?.message).toMatch(/code=514/);
    expect(fake.connectionCount()).toBe(0);
  });
});

describe("webhook delivery checked by the SDK's own EventDispatcher", () => {
  const encryptKey = "test-encrypt-key";

  const startApp = async (): Promise<{ url: string; received: unknown[] }> => {
    const received: unknown[] = [];
    const dispatcher = new lark.EventDispatcher({ encryptKey, logger: quiet }).register({
      "im.message.receive_v1": async (data) => {
        received.push(data);
        return "ok";
      },
    });
    const server: Server = createServer(lark.adaptDefault("/webhook", dispatcher, { autoChallenge: true }));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`, received };
  };

  it("encrypts and signs so that the SDK decrypts and accepts the event", async () => {
    const app = await startApp();
    const event = fake.messageEvent({ chatType: "p2p", text: "via webhook" });
    const response = await fake.postWebhook(app.url, event.envelope, { encryptKey, verificationToken: "vt" });
    expect(response.status).toBe(200);
    expect(response.sentBody).toMatch(/^\{"encrypt":"/);
    expect(app.received).toMatchObject([{ event_id: event.eventId, token: "vt" }]);
  });

  it("sends a bad signature that the SDK rejects", async () => {
    const app = await startApp();
    const event = fake.messageEvent({ chatType: "p2p", text: "forged" });
    await fake.postWebhook(app.url, event.envelope, { encryptKey, badSignature: true });
    expect(app.received).toEqual([]);
  });

  it("encrypts url_verification so that the SDK answers the challenge", async () => {
    const app = await startApp();
    const response = await fake.postWebhook(app.url, buildUrlVerification("ch-1"), { encryptKey });
    expect(response.body).toEqual({ challenge: "ch-1" });
  });
});

describe("interactive cards and button presses", () => {
  const card = (buttons: readonly { label: string; type?: string; reply: string }[]) => ({
    config: { update_multi: true },
    elements: [
      { tag: "markdown", content: "Run `deploy`?" },
      {
        tag: "action",
        actions: buttons.map((button) => ({
          tag: "button",
          text: { tag: "plain_text", content: button.label },
          type: button.type ?? "default",
          value: { reply: button.reply },
        })),
      },
    ],
  });

  const sendCard = async (content: unknown, receiveId = "oc_group_1") => {
    const result = await client().im.message.create({
      params: { receive_id_type: "chat_id" },
      data: { receive_id: receiveId, msg_type: "interactive", content: JSON.stringify(content) },
    });
    return result.data?.message_id ?? "";
  };

  /** A long-connection app that answers every press with a toast and, when asked, a card without buttons. */
  const connectApp = async (replaceCard: boolean) => {
    const presses: unknown[] = [];
    const dispatcher = new lark.EventDispatcher({ logger: quiet }).register({
      "card.action.trigger": async (data: unknown) => {
        presses.push(data);
        return {
          toast: { type: "info", content: "pressed" },
          ...(replaceCard
            ? { card: { type: "raw", data: { elements: [{ tag: "markdown", content: "done" }] } } }
            : {}),
        };
      },
    });
    const ws = new lark.WSClient({
      appId: fake.appId,
      appSecret: fake.appSecret,
      domain: fake.baseUrl,
      logger: quiet,
    });
    closers.push(() => ws.close({ force: true }));
    await ws.start({ eventDispatcher: dispatcher });
    await fake.waitForConnection();
    return presses;
  };

  it("records an interactive message with its card and lists the buttons it shows", async () => {
    const messageId = await sendCard(card([{ label: "Yes", type: "primary", reply: "yes" }]));
    expect(fake.sent()).toMatchObject([
      { messageId, msgType: "interactive", content: { elements: [{}, {}] } },
    ]);
    expect(fake.buttons(messageId)).toEqual([{ label: "Yes", type: "primary", value: { reply: "yes" } }]);
  });

  it("refuses a card Feishu would refuse: no elements, or a button of an unknown type", async () => {
    const error = await sendCard({ title: "no elements" }).catch((caught: unknown) => caught);
    expect(httpFailure(error)).toMatchObject({ status: 400, data: { code: 230099 } });
    const badType = await sendCard(card([{ label: "Go", type: "secondary", reply: "go" }])).catch(
      (caught: unknown) => caught,
    );
    expect(httpFailure(badType)).toMatchObject({ status: 400, data: { code: 230099 } });
    expect(fake.sent()).toEqual([]);
  });

  it("delivers a press over the long connection as card.action.trigger and applies the answer", async () => {
    const presses = await connectApp(true);
    const messageId = await sendCard(card([{ label: "Yes", reply: "yes" }]));
    const operator = { openId: "ou_presser" };
    const action = await fake.pressButton({ messageId, label: "Yes", operator });
    expect(presses).toMatchObject([
      {
        event_type: "card.action.trigger",
        event_id: action.eventId,
        token: action.token,
        operator: { open_id: "ou_presser" },
        action: { tag: "button", value: { reply: "yes" } },
        context: { open_message_id: messageId, open_chat_id: "oc_group_1" },
      },
    ]);
    expect(action).toMatchObject({
      transport: "long-connection",
      status: 200,
      operatorOpenId: "ou_presser",
      toast: { type: "info", content: "pressed" },
      cardReplaced: true,
    });
    expect(fake.card(messageId)).toEqual({ elements: [{ tag: "markdown", content: "done" }] });
    // The buttons are gone, so nobody can press them again.
    expect(() => fake.cardActionEvent({ messageId, label: "Yes" })).toThrow(/shows no button "Yes"/);
    expect(fake.cardActions()).toHaveLength(1);
  });

  it("keeps the card when the answer is only a toast", async () => {
    await connectApp(false);
    const messageId = await sendCard(card([{ label: "Yes", reply: "yes" }]));
    const action = await fake.pressButton({ messageId, label: "Yes" });
    expect(action).toMatchObject({ cardReplaced: false, toast: { content: "pressed" } });
    expect(fake.buttons(messageId).map((button) => button.label)).toEqual(["Yes"]);
  });

  it("updates a shared card by PATCH and refuses to patch a message that is no card", async () => {
    const messageId = await sendCard(card([{ label: "Yes", reply: "yes" }]));
    const patched = { config: { update_multi: true }, elements: [{ tag: "markdown", content: "closed" }] };
    const result = await client().im.message.patch({
      path: { message_id: messageId },
      data: { content: JSON.stringify(patched) },
    });
    expect(result.code).toBe(0);
    expect(fake.card(messageId)).toEqual(patched);
    expect(fake.buttons(messageId)).toEqual([]);
    const error = await client()
      .im.message.patch({ path: { message_id: "om_not_a_card" }, data: { content: JSON.stringify(patched) } })
      .catch((caught: unknown) => caught);
    expect(httpFailure(error)).toMatchObject({ status: 400, data: { code: 230001 } });
  });

  it("delivers a press to a request URL, encrypted and signed, and reads the answer from the body", async () => {
    const encryptKey = "card-encrypt-key";
    const dispatcher = new lark.EventDispatcher({ encryptKey, logger: quiet }).register({
      "card.action.trigger": async () => ({ toast: { type: "success", content: "ok" } }),
    });
    const server: Server = createServer(lark.adaptDefault("/webhook", dispatcher, { autoChallenge: true }));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise((resolve) => server.close(resolve)));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`;
    const messageId = await sendCard(card([{ label: "No", type: "danger", reply: "no" }]));
    const action = await fake.pressButtonByWebhook(url, { messageId, label: "No" }, { encryptKey });
    expect(action).toMatchObject({
      transport: "webhook",
      status: 200,
      toast: { type: "success", content: "ok" },
    });
  });
});
