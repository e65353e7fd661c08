import { waitUntil } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../test/adapter-harness.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const start = async (...args: Parameters<typeof startHarness>) => {
  harness = await startHarness(...args);
  await harness.fake.waitForConnection();
  return harness;
};

/** The Markdown of a sent post. */
const markdownOf = (content: unknown): string => {
  const text: unknown = Reflect.get(
    Object(Object(Object(Reflect.get(Object(content), "zh_cn")).content)[0])[0],
    "text",
  );
  return typeof text === "string" ? text : "";
};

describe("FeishuAdapter over the long connection", () => {
  it("normalizes a direct message, acks it at once and answers it in the same chat", async () => {
    const { fake, adapter, waitForInbound } = await start();
    const event = fake.sendEvent({ chatType: "p2p", text: "hello bot" });
    const [message] = await waitForInbound(1);
    expect(message).toMatchObject({
      sessionKey: "feishu:default:dm:ou_user_1",
      channel: "feishu",
      id: event.messageId,
      account: "default",
      conversation: { kind: "dm", id: event.chatId },
      sender: { id: "ou_user_1" },
      mentioned: true,
      text: "hello bot",
      raw: { eventId: event.eventId },
    });
    const [ack] = await fake.waitForAcks(1);
    expect(ack).toMatchObject({ frameMessageId: event.frameMessageId, code: 200 });
    expect(ack?.latencyMs).toBeLessThan(1000);
    expect(adapter.status()).toMatchObject({
      channel: "feishu",
      state: "ready",
      lastEventAt: message?.receivedAt,
    });

    await adapter.send({ sessionKey: message!.sessionKey, text: "Hi **there**", inReplyTo: message });
    expect(fake.sent()).toMatchObject([
      {
        kind: "reply",
        replyTo: event.messageId,
        chatId: event.chatId,
        replyInThread: false,
        msgType: "post",
      },
    ]);
    expect(markdownOf(fake.sent()[0]?.content)).toBe("Hi **there**");
  });

  it("reports a group message without a mention as not mentioned", async () => {
    const { fake, waitForInbound } = await start();
    fake.sendEvent({ chatType: "group", chatId: "oc_team", text: "just chatting" });
    const [message] = await waitForInbound(1);
    expect(message).toMatchObject({
      sessionKey: "feishu:default:group:oc_team",
      conversation: { kind: "group", id: "oc_team" },
      mentioned: false,
      text: "just chatting",
    });
  });

  it("strips the bot mention from a group message and threads the reply to it", async () => {
    const { fake, adapter, waitForInbound } = await start();
    const event = fake.sendEvent({
      chatType: "group",
      chatId: "oc_team",
      text: "what is the status?",
      mentionBot: true,
    });
    const [message] = await waitForInbound(1);
    expect(message).toMatchObject({ mentioned: true, text: "what is the status?" });
    await adapter.send({ sessionKey: message!.sessionKey, text: "All green.", inReplyTo: message });
    expect(fake.sent()).toMatchObject([
      { kind: "reply", replyTo: event.messageId, chatId: "oc_team", replyInThread: false },
    ]);
  });

  it("keeps a topic thread in its own session and replies inside the thread", async () => {
    const { fake, adapter, waitForInbound } = await start();
    const event = fake.sendEvent({
      chatType: "group",
      text: "and now?",
      mentionBot: true,
      rootId: "om_root",
      parentId: "om_root",
      threadId: "omt_42",
    });
    const [message] = await waitForInbound(1);
    expect(message).toMatchObject({
      sessionKey: "feishu:default:group:oc_group_1:omt_42",
      conversation: { kind: "thread", id: "omt_42", parentId: "oc_group_1" },
      replyTo: "om_root",
    });
    await adapter.send({ sessionKey: message!.sessionKey, text: "In the thread.", inReplyTo: message });
    // Without inReplyTo the adapter still finds the thread through the last message it saw there.
    await adapter.send({ sessionKey: message!.sessionKey, text: "Still here." });
    expect(fake.sent()).toMatchObject([
      { kind: "reply", replyTo: event.messageId, replyInThread: true },
      { kind: "reply", replyTo: event.messageId, replyInThread: true },
    ]);
  });

  it("keeps a topic inside a direct chat in the DM's session but still answers inside the topic", async () => {
    const { fake, adapter, waitForInbound } = await start();
    const event = fake.sendEvent({ chatType: "p2p", text: "in a topic", rootId: "om_r", threadId: "omt_dm" });
    const [message] = await waitForInbound(1);
    expect(message).toMatchObject({
      sessionKey: "feishu:default:dm:ou_user_1",
      conversation: { kind: "dm", id: event.chatId },
      raw: { threadId: "omt_dm" },
    });
    await adapter.send({ sessionKey: message!.sessionKey, text: "ok", inReplyTo: message });
    expect(fake.sent()).toMatchObject([{ kind: "reply", replyTo: event.messageId, replyInThread: true }]);
  });

  it("flattens a rich-text post delivered in several frames", async () => {
    const { fake, waitForInbound } = await start();
    fake.sendEvent(
      {
        chatType: "group",
        mentionBot: true,
        post: {
          title: "Incident",
          content: [
            [
              { tag: "text", text: " db is down, see " },
              { tag: "a", text: "dashboard", href: "https://grafana.example/d/1" },
            ],
            [{ tag: "img", image_key: "img_v2_abc" }],
          ],
        },
      },
      { parts: 3 },
    );
    const [message] = await waitForInbound(1);
    expect(message).toMatchObject({
      mentioned: true,
      text: "Incident\ndb is down, see [dashboard](https://grafana.example/d/1)",
      attachments: [{ kind: "image", id: "img_v2_abc" }],
    });
  });

  it("gives a redelivered message (same message_id, new event_id) the same id", async () => {
    const { fake, waitForInbound } = await start();
    fake.sendEvent({ chatType: "p2p", text: "once", messageId: "om_same", eventId: "evt_1" });
    fake.sendEvent({ chatType: "p2p", text: "once", messageId: "om_same", eventId: "evt_2" });
    const [first, second] = await waitForInbound(2);
    expect(first?.id).toBe("om_same");
    expect(second?.id).toBe("om_same");
    expect([first?.raw, second?.raw]).toMatchObject([{ eventId: "evt_1" }, { eventId: "evt_2" }]);
  });

  it("delivers a 5,000-character answer with a code block within the size limit, fence intact", async () => {
    const { fake, adapter, waitForInbound } = await start();
    fake.sendEvent({ chatType: "p2p", text: "write me a script" });
    const [message] = await waitForInbound(1);
    const code = [
      "```bash",
      ...Array.from({ length: 80 }, (_, index) => `echo "step ${index}" && sleep 1`),
      "```",
    ].join("\n");
    const answer =
      `${"Here you go, with comments. ".repeat(50)}\n\n${code}\n\n${"Run it as root. ".repeat(200)}`.slice(
        0,
        5_000,
      );
    await adapter.send({ sessionKey: message!.sessionKey, text: answer, inReplyTo: message });
    const sent = fake.sent();
    expect(sent.length).toBeGreaterThanOrEqual(1);
    for (const post of sent) expect(post.bodyBytes).toBeLessThanOrEqual(30 * 1024);
    expect(sent.filter((post) => markdownOf(post.content).includes(code))).toHaveLength(1);
  });

  it("splits an answer too big for one post into several replies, each under 30 KB", async () => {
    const { fake, adapter, waitForInbound } = await start();
    fake.sendEvent({ chatType: "p2p", text: "dump the logs" });
    const [message] = await waitForInbound(1);
    const line = '{"level":"info","msg":"请求完成","path":"/api/v1/items"}';
    const answer = ["```json", ...Array.from({ length: 1_200 }, () => line), "```"].join("\n");
    await adapter.send({ sessionKey: message!.sessionKey, text: answer, inReplyTo: message });
    const sent = fake.sent();
    expect(sent.length).toBeGreaterThan(1);
    for (const post of sent) {
      expect(post.bodyBytes).toBeLessThanOrEqual(30 * 1024);
      expect(markdownOf(post.content)).toMatch(/^```json\n[\s\S]*\n```$/);
    }
    const lines = sent
      .flatMap((post) => markdownOf(post.content).split("\n"))
      .filter((text) => text === line);
    expect(lines).toHaveLength(1_200);
  });

  it("reconnects after the platform drops the long connection and keeps receiving", async () => {
    const { fake, adapter, waitForInbound } = await start();
    fake.sendEvent({ chatType: "p2p", text: "before" });
    await waitForInbound(1);
    fake.dropConnection();
    await fake.waitForConnection(2);
    await waitUntil(() => adapter.status().state === "ready", { what: "ready after reconnecting" });
    fake.sendEvent({ chatType: "p2p", text: "after" });
    const messages = await waitForInbound(2);
    expect(messages.map((message) => message.text)).toEqual(["before", "after"]);
  });

  it("shows a Typing reaction while a turn runs and removes it afterwards", async () => {
    const { fake, adapter, waitForInbound } = await start();
    const event = fake.sendEvent({ chatType: "p2p", text: "think hard" });
    const [message] = await waitForInbound(1);
    const stopTyping = await adapter.startTyping(message!);
    expect(fake.reactions()).toMatchObject([
      { messageId: event.messageId, emojiType: "Typing", deleted: false },
    ]);
    await stopTyping();
    expect(fake.reactions()).toMatchObject([{ messageId: event.messageId, deleted: true }]);
  });

  it("ignores its own messages echoed back", async () => {
    const { fake, waitForInbound } = await start();
    fake.sendEvent({ chatType: "group", text: "from the bot", sender: { openId: fake.botOpenId } });
    fake.sendEvent({ chatType: "group", text: "from a user" });
    await fake.waitForAcks(2);
    const messages = await waitForInbound(1);
    expect(messages.map((message) => message.text)).toEqual(["from a user"]);
  });

  it("reports its state from start to stop", async () => {
    const { adapter, fake } = await startHarness({ start: false }).then((started) => (harness = started));
    expect(adapter.status()).toMatchObject({ state: "connecting", detail: "not started" });
    await adapter.start(() => {});
    expect(adapter.status().state).toBe("ready");
    await adapter.stop();
    expect(adapter.status()).toMatchObject({ state: "disabled", detail: "stopped" });
    await waitUntil(() => !fake.isConnected(), { what: "the connection to close" });
  });
});
