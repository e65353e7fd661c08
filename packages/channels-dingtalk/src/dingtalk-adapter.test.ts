import { waitUntil } from "@almanac/testkit/dingtalk";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  dingtalkSettings,
  type Harness,
  type HarnessOptions,
  startHarness,
} from "../test/adapter-harness.js";
import { isDingTalkError } from "./errors.js";

let harness: Harness | undefined;

beforeEach(() => {
  // dingtalk-stream prints "connect success" / "Disconnecting." with console.info itself.
  vi.spyOn(console, "info").mockImplementation(() => {});
});

afterEach(async () => {
  await harness?.close();
  harness = undefined;
  vi.restoreAllMocks();
});

async function start(options: HarnessOptions = {}): Promise<Harness> {
  harness = await startHarness(options);
  return harness;
}

describe("DingTalk adapter: receiving", () => {
  it("normalizes a single-chat message and answers it through the sessionWebhook", async () => {
    const { fake, adapter, nextInbound } = await start();
    expect(adapter.status()).toMatchObject({ channel: "dingtalk", state: "ready" });
    const delivery = fake.sendRobotMessage({
      conversation: "single",
      text: " hello bot",
      senderNick: "Alice",
    });
    const message = await nextInbound(1);
    expect(message).toMatchObject({
      sessionKey: "dingtalk:default:dm:staff-001",
      channel: "dingtalk",
      id: delivery.msgId,
      account: "default",
      conversation: { kind: "dm", id: delivery.payload.conversationId },
      sender: { id: "staff-001", name: "Alice" },
      mentioned: true,
      text: "hello bot",
      raw: { streamMessageId: delivery.messageId },
    });
    expect(message.id).not.toBe(delivery.messageId);

    await adapter.send({ sessionKey: message.sessionKey, text: "**Hi** Alice", inReplyTo: message });
    expect(fake.sent()).toEqual([
      expect.objectContaining({
        route: "sessionWebhook",
        conversationType: "1",
        conversationId: delivery.payload.conversationId,
        msgtype: "markdown",
        title: "Hi Alice",
        text: "**Hi** Alice",
      }),
    ]);
    expect(adapter.status().lastEventAt).toBeTypeOf("number");
    expect(fake.problems()).toEqual([]);
  });

  it("marks a group message that @-mentions the robot and answers in the group", async () => {
    const { fake, adapter, nextInbound } = await start();
    const delivery = fake.sendRobotMessage({
      conversation: "group",
      text: "status?",
      conversationTitle: "Ops",
    });
    const message = await nextInbound(1);
    expect(message).toMatchObject({
      sessionKey: `dingtalk:default:group:${delivery.payload.conversationId}`,
      conversation: { kind: "group", id: delivery.payload.conversationId, name: "Ops" },
      mentioned: true,
      text: "status?",
    });
    await adapter.send({ sessionKey: message.sessionKey, text: "All green.", inReplyTo: message });
    expect(fake.sent()[0]).toMatchObject({
      route: "sessionWebhook",
      conversationType: "2",
      conversationId: delivery.payload.conversationId,
    });
  });

  it("passes a group message without the robot in the at-list on with mentioned false (the gate decides)", async () => {
    const { fake, nextInbound } = await start();
    fake.sendRobotMessage({ conversation: "group", text: "not for you", isInAtList: false });
    expect(await nextInbound(1)).toMatchObject({ mentioned: false, conversation: { kind: "group" } });
  });

  it("flattens rich text and keeps pictures as attachment references", async () => {
    const { fake, nextInbound } = await start();
    fake.sendRobotMessage({
      conversation: "single",
      richText: [{ text: "What is in" }, { picture: "dl-code-1" }, { text: "this picture?" }],
    });
    expect(await nextInbound(1)).toMatchObject({
      text: "What is in\nthis picture?",
      attachments: [{ kind: "image", id: "dl-code-1" }],
    });
  });

  it("acks every CALLBACK promptly and before the reply goes out, even when the handler throws", async () => {
    const { fake, nextInbound } = await start({
      fake: { redeliverAfterMs: 2_000 },
      onMessage: (message, { adapter }) => {
        void adapter.send({
          sessionKey: message.sessionKey,
          text: `echo ${message.text}`,
          inReplyTo: message,
        });
        throw new Error("handler bug");
      },
    });
    const first = fake.sendRobotMessage({ conversation: "single", text: "one" });
    const second = fake.sendRobotMessage({ conversation: "group", text: "two" });
    await nextInbound(2);
    await waitUntil(() => fake.sent().length === 2 && fake.acks().length === 2, {
      message: "2 acks and 2 replies",
    });
    const acks = fake.acks();
    expect(acks.map((ack) => ack.messageId).sort()).toEqual([first.messageId, second.messageId].sort());
    for (const ack of acks) expect(ack.latencyMs).toBeLessThan(1_000);
    const firstReply = Math.min(...fake.sent().map((sent) => sent.seq));
    expect(Math.max(...acks.map((ack) => ack.seq))).toBeLessThan(firstReply);
    expect(fake.deliveries()).toHaveLength(2);
    expect(harness?.logs.filter((entry) => entry.level === "error").map((entry) => entry.message)).toEqual([
      "DingTalk onMessage threw",
      "DingTalk onMessage threw",
    ]);
  });

  it("gives a redelivered message the same id (msgId), so the gate can drop it", async () => {
    const { fake, nextInbound } = await start();
    const delivery = fake.sendRobotMessage({ conversation: "single", text: "once" });
    const original = await nextInbound(1);
    fake.redeliver(delivery.messageId);
    const again = await nextInbound(2);
    expect(again.id).toBe(original.id);
    expect(again.id).toBe(delivery.msgId);
    await waitUntil(() => fake.acks().length === 2, { message: "both pushes acked" });
  });

  it("skips a payload it cannot read but still acks it", async () => {
    const { fake, inbound, logs } = await start();
    fake.sendRobotMessage({ conversation: "single", text: "bad", extra: { conversationType: "9" } });
    await waitUntil(() => fake.acks().length === 1);
    await waitUntil(() => logs.some((entry) => entry.message === "DingTalk robot payload ignored"));
    expect(inbound).toHaveLength(0);
  });
});

describe("DingTalk adapter: lifecycle", () => {
  it("refuses to start twice and reports disabled once stopped", async () => {
    const { adapter, fake } = await start();
    await expect(adapter.start(() => {})).rejects.toSatisfy((error) =>
      isDingTalkError(error, "dingtalk.lifecycle"),
    );
    await adapter.stop();
    await adapter.stop();
    expect(adapter.status()).toMatchObject({ state: "disabled", detail: "stopped" });
    await waitUntil(() => !fake.isConnected(), { message: "socket closed" });
  });

  it("refuses a keep-alive timeout that is not longer than its interval", async () => {
    const { createDingTalkAdapter } = await import("./dingtalk-adapter.js");
    const settings = dingtalkSettings({ clientId: "id", clientSecret: "secret" });
    const options = { keepAliveIntervalMs: 5_000 };
    expect(() => createDingTalkAdapter(settings, { ...options, keepAliveTimeoutMs: 5_000 })).toThrow(
      /keepAliveTimeoutMs must be longer than keepAliveIntervalMs/,
    );
    expect(() => createDingTalkAdapter(settings, { ...options, keepAliveTimeoutMs: 5_001 })).not.toThrow();
  });
});
