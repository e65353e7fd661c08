import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { InboundMessage, MessageButton } from "@almanac/core";
import { buildCardActionEvent } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, type HarnessOptions, startHarness } from "../test/adapter-harness.js";
import type { FeishuAdapter } from "./feishu-adapter.js";

let harness: Harness | undefined;
let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await harness?.close();
  harness = undefined;
});

const start = async (options: HarnessOptions = {}) => {
  harness = await startHarness(options);
  if (harness.adapter.receivesWebhooks === false) await harness.fake.waitForConnection();
  return harness;
};

const approval: readonly MessageButton[] = [
  { label: "Approve", reply: "approve K7QD", style: "primary" },
  { label: "Deny", reply: "deny K7QD", style: "danger" },
];
const question = "Approval needed (K7QD): the assistant wants to run `get-sum`.";
const owner = { openId: "ou_owner" };

/** The Markdown of a card (its first element). */
const cardText = (card: unknown): unknown =>
  Reflect.get(Object(Reflect.get(Object(card), "elements"))[0] ?? {}, "content");

/** Sends the approval question as an answer to `inbound`; returns the card message id. */
async function askWithButtons({ fake, adapter }: Harness, inbound: InboundMessage): Promise<string> {
  await adapter.send({
    sessionKey: inbound.sessionKey,
    text: question,
    inReplyTo: inbound,
    buttons: approval,
  });
  const card = fake.sent().at(-1);
  expect(card).toMatchObject({ kind: "reply", replyTo: inbound.id, msgType: "interactive" });
  return card?.messageId ?? "";
}

describe("FeishuAdapter with buttons, over the long connection", () => {
  it("sends a card, turns a press into the message its presser would type, and takes the buttons away", async () => {
    const h = await start();
    const { fake, adapter } = h;
    fake.sendEvent({ chatType: "p2p", text: "add 20 and 22", sender: owner });
    const [typed] = await h.waitForInbound(1);
    const cardId = await askWithButtons(h, typed!);
    expect(cardText(fake.card(cardId))).toBe(question);
    expect(fake.buttons(cardId)).toEqual([
      {
        label: "Approve",
        type: "primary",
        value: {
          almanac_reply: "approve K7QD",
          almanac_chat_type: "p2p",
          almanac_chat_id: "oc_p2p_ou_owner",
        },
      },
      expect.objectContaining({ label: "Deny", type: "danger" }),
    ]);

    const action = await fake.pressButton({ messageId: cardId, label: "Approve", operator: owner });
    const [, pressed] = await h.waitForInbound(2);
    expect(pressed).toMatchObject({
      sessionKey: typed?.sessionKey,
      conversation: typed?.conversation,
      id: action.eventId,
      sender: { id: "ou_owner" },
      mentioned: true,
      text: "approve K7QD",
      replyTo: cardId,
    });
    expect(action).toMatchObject({ status: 200, toast: { type: "info", content: "Sent: approve K7QD" } });
    expect(action.cardReplaced).toBe(true);
    expect(action.latencyMs).toBeLessThan(3000);
    expect(cardText(fake.card(cardId))).toBe(question);
    expect(JSON.stringify(fake.card(cardId))).toContain("Sent: approve K7QD");
    expect(() => fake.cardActionEvent({ messageId: cardId, label: "Deny", operator: owner })).toThrow(
      /shows no button/,
    );
    expect(adapter.status().lastEventAt).toBe(pressed?.receivedAt);

    // The answer to the press, and the typing indicator while it is worked on, go to the card.
    const stopTyping = await adapter.startTyping(pressed!);
    expect(fake.reactions()).toMatchObject([{ messageId: cardId, deleted: false }]);
    await stopTyping();
    await adapter.send({ sessionKey: pressed!.sessionKey, text: "Approved K7QD.", inReplyTo: pressed });
    expect(fake.sent().at(-1)).toMatchObject({ kind: "reply", replyTo: cardId, msgType: "post" });
  });

  it("keeps the buttons of a card in a group, where anyone present may press", async () => {
    const h = await start();
    const { fake } = h;
    fake.sendEvent({ chatType: "group", chatId: "oc_team", text: "add", mentionBot: true, sender: owner });
    const [typed] = await h.waitForInbound(1);
    const cardId = await askWithButtons(h, typed!);
    const action = await fake.pressButton({
      messageId: cardId,
      label: "Deny",
      operator: { openId: "ou_guest" },
    });
    const [, pressed] = await h.waitForInbound(2);
    expect(pressed).toMatchObject({
      sessionKey: "feishu:default:group:oc_team",
      conversation: { kind: "group", id: "oc_team" },
      sender: { id: "ou_guest" },
      mentioned: true,
      text: "deny K7QD",
    });
    expect(action).toMatchObject({ toast: { content: "Sent: deny K7QD" }, cardReplaced: false });
    expect(fake.buttons(cardId).map((button) => button.label)).toEqual(["Approve", "Deny"]);
  });

  it("keys a press in a topic by the topic and answers inside it", async () => {
    const h = await start();
    const { fake, adapter } = h;
    fake.sendEvent({
      chatType: "group",
      chatId: "oc_team",
      text: "add",
      mentionBot: true,
      sender: owner,
      rootId: "om_root",
      threadId: "omt_42",
    });
    const [typed] = await h.waitForInbound(1);
    const cardId = await askWithButtons(h, typed!);
    expect(fake.sent().at(-1)).toMatchObject({ replyInThread: true });
    await fake.pressButton({ messageId: cardId, label: "Approve", operator: owner });
    const [, pressed] = await h.waitForInbound(2);
    expect(pressed).toMatchObject({
      sessionKey: typed?.sessionKey,
      conversation: { kind: "thread", id: "omt_42", parentId: "oc_team" },
    });
    await adapter.send({ sessionKey: pressed!.sessionKey, text: "ok", inReplyTo: pressed });
    expect(fake.sent().at(-1)).toMatchObject({ replyTo: cardId, replyInThread: true });
  });

  it("sends a question too long for one card as posts first and the buttons on a card last, each under 30 KB", async () => {
    const h = await start();
    const { fake, adapter } = h;
    fake.sendEvent({ chatType: "p2p", text: "write it", sender: owner });
    const [typed] = await h.waitForInbound(1);
    const big = [
      "```json",
      ...Array.from({ length: 1500 }, (_, index) => `  "line ${index}": "内容"`),
      "```",
    ];
    await adapter.send({
      sessionKey: typed!.sessionKey,
      text: big.join("\n"),
      inReplyTo: typed,
      buttons: approval,
    });
    const sent = fake.sent();
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.map((message) => message.msgType)).toEqual([
      ...Array.from({ length: sent.length - 1 }, () => "post"),
      "interactive",
    ]);
    for (const message of sent) expect(message.bodyBytes).toBeLessThanOrEqual(30 * 1024);
    expect(fake.buttons(sent.at(-1)?.messageId ?? "")).toHaveLength(2);
  });

  it("refuses a press of a card in another chat than it was sent to, and ignores other cards' buttons", async () => {
    const h = await start();
    const { fake } = h;
    fake.sendEvent({ chatType: "group", chatId: "oc_team", text: "add", mentionBot: true, sender: owner });
    const [typed] = await h.waitForInbound(1);
    const cardId = await askWithButtons(h, typed!);
    const [approve] = fake.buttons(cardId);
    const forwarded = buildCardActionEvent(
      { messageId: "om_forwarded", chatId: "oc_elsewhere", value: approve?.value },
      fake,
    );
    const foreign = buildCardActionEvent(
      { messageId: cardId, chatId: "oc_team", value: { action: "x" } },
      fake,
    );
    const frames = [fake.sendRawEvent(forwarded.envelope), fake.sendRawEvent(foreign.envelope)];
    const acks = await fake.waitForAcks(3);
    const answers = frames.map((frame) => acks.find((ack) => ack.frameMessageId === frame));
    expect(answers[0]).toMatchObject({
      code: 200,
      data: {
        toast: {
          type: "error",
          content: "This button works only in the chat it was sent to. Nothing was sent.",
        },
      },
    });
    expect(answers[1]).toMatchObject({ code: 200 });
    expect(answers[1]?.data).toBeUndefined();
    expect(h.inbound).toHaveLength(1);
  });
});

describe("FeishuAdapter with buttons, over webhooks", () => {
  const encryptKey = "kE9s-encrypt-key";
  const verificationToken = "vT-verification-token";

  /** Serves the adapter's webhook handler the way the server's route does: raw body bytes and headers. */
  async function serve(adapter: FeishuAdapter): Promise<string> {
    server = createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(Buffer.from(chunk));
      const answer = await adapter.handleWebhook({
        headers: request.headers,
        rawBody: Buffer.concat(chunks),
      });
      response.writeHead(answer.status, { "content-type": "application/json" });
      response.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/channels/feishu/webhook`;
  }

  it("verifies a press like an event, hands it over and answers with the toast and the new card", async () => {
    const h = await start({ settings: { mode: "webhook", encryptKey, verificationToken } });
    const { fake, adapter } = h;
    const url = await serve(adapter);
    const event = fake.messageEvent({ chatType: "p2p", text: "add", sender: owner });
    await fake.postWebhook(url, event.envelope, { encryptKey, verificationToken });
    const [typed] = await h.waitForInbound(1);
    const cardId = await askWithButtons(h, typed!);

    const forged = await fake
      .pressButtonByWebhook(
        url,
        { messageId: cardId, label: "Approve", operator: owner },
        { encryptKey, verificationToken, badSignature: true },
      )
      .catch((error: unknown) => error);
    expect(forged).toMatchObject({ status: 401, cardReplaced: false });
    expect(h.inbound).toHaveLength(1);

    const action = await fake.pressButtonByWebhook(
      url,
      { messageId: cardId, label: "Approve", operator: owner },
      { encryptKey, verificationToken },
    );
    expect(action).toMatchObject({
      transport: "webhook",
      status: 200,
      toast: { type: "info", content: "Sent: approve K7QD" },
      cardReplaced: true,
    });
    const [, pressed] = await h.waitForInbound(2);
    expect(pressed).toMatchObject({
      sessionKey: typed?.sessionKey,
      text: "approve K7QD",
      sender: { id: "ou_owner" },
    });
    expect(fake.buttons(cardId)).toEqual([]);
  });
});
