import { formatSessionKey } from "@almanac/core";
import { waitUntil } from "@almanac/testkit/discord";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AdapterHarness, createAdapterHarness } from "../test/adapter-harness.js";

let harness: AdapterHarness;

beforeEach(async () => {
  harness = await createAdapterHarness();
  await harness.start();
});
afterEach(async () => {
  await harness.close();
});

/** Dispatches a last message and waits for it: everything dispatched before it has been handled by then. */
async function settle(): Promise<void> {
  const { d } = harness.fake.dispatchMessage({ where: "dm", content: "sentinel" });
  await harness.received((message) => message.id === d.id, "the sentinel message");
}

describe("receiving", () => {
  it("normalizes a DM and answers in the same DM, threaded to the question", async () => {
    const { fake, adapter } = harness;
    const { ids, user } = fake.world;
    const event = fake.dispatchMessage({ where: "dm", content: "hello there" });
    const message = await harness.received((candidate) => candidate.id === event.d.id);
    expect(message).toMatchObject({
      sessionKey: formatSessionKey({ channel: "discord", account: "default", kind: "dm", id: user.id }),
      channel: "discord",
      account: "default",
      conversation: { kind: "dm", id: ids.dmChannel },
      sender: { id: user.id, name: "Alice Liddell" },
      mentioned: true,
      text: "hello there",
      raw: event.d,
    });
    expect(adapter.status()).toMatchObject({ state: "ready", lastEventAt: message.receivedAt });

    await adapter.send({ sessionKey: message.sessionKey, text: "hi back", inReplyTo: message });
    expect(fake.sent()).toMatchObject([
      { channelId: ids.dmChannel, content: "hi back", messageReference: { message_id: message.id } },
    ]);
    await settle();
    expect(harness.inbound.map((inbound) => inbound.text)).toEqual(["hello there", "sentinel"]);
  });

  it("marks a guild message without a mention as not mentioned, with the channel as the group", async () => {
    const { ids } = harness.fake.world;
    const event = harness.fake.dispatchMessage({ where: "channel", content: "just chatting" });
    const message = await harness.received((candidate) => candidate.id === event.d.id);
    expect(message).toMatchObject({
      sessionKey: formatSessionKey({
        channel: "discord",
        account: "default",
        kind: "group",
        id: ids.channel,
      }),
      conversation: { kind: "group", id: ids.channel, name: "general" },
      mentioned: false,
      text: "just chatting",
    });
  });

  it("strips a mention of the bot, marks it mentioned and replies threaded in the same channel", async () => {
    const { fake, adapter } = harness;
    const event = fake.dispatchMessage({ where: "channel", content: "what is the plan?", mention: "user" });
    const message = await harness.received((candidate) => candidate.id === event.d.id);
    expect(message).toMatchObject({ mentioned: true, text: "what is the plan?" });
    // `raw` is the payload as Discord sent it, untouched by what discord.js does with it afterwards.
    expect(message.raw).toEqual(event.d);
    await adapter.send({ sessionKey: message.sessionKey, text: "The plan is simple.", inReplyTo: message });
    const [reply] = fake.sent();
    expect(reply).toMatchObject({
      channelId: fake.world.ids.channel,
      content: "The plan is simple.",
      messageReference: { message_id: event.d.id, channel_id: fake.world.ids.channel },
      allowedMentions: { parse: ["users"] },
    });
  });

  it("counts nickname and managed-role mentions and replies to the bot's own post as mentions", async () => {
    const { fake, adapter } = harness;
    const nickname = fake.dispatchMessage({ where: "channel", content: "nick", mention: "nickname" });
    const role = fake.dispatchMessage({ where: "channel", content: "role", mention: "role" });
    const first = await harness.received((candidate) => candidate.id === role.d.id);
    await adapter.send({ sessionKey: first.sessionKey, text: "noted" });
    const botPost = fake.sent()[0]?.message;
    const reply = fake.dispatchMessage({
      where: "channel",
      content: "and then?",
      replyTo: botPost,
      replyPing: false,
    });
    const answer = await harness.received((candidate) => candidate.id === reply.d.id);
    const byId = (id: unknown) => harness.inbound.find((candidate) => candidate.id === id);
    expect(byId(nickname.d.id)).toMatchObject({ mentioned: true, text: "nick" });
    expect(first).toMatchObject({ mentioned: true, text: "role" });
    expect(answer).toMatchObject({ mentioned: true, text: "and then?", replyTo: botPost?.id });
  });

  it("keeps a thread message in its thread: session under the parent channel, reply inside the thread", async () => {
    const { fake, adapter } = harness;
    const { ids } = fake.world;
    const event = fake.dispatchMessage({ where: "thread", content: "in the thread", mention: "user" });
    const message = await harness.received((candidate) => candidate.id === event.d.id);
    expect(message).toMatchObject({
      sessionKey: formatSessionKey({
        channel: "discord",
        account: "default",
        kind: "group",
        id: ids.channel,
        thread: ids.thread,
      }),
      conversation: { kind: "thread", id: ids.thread, parentId: ids.channel, name: "a-thread" },
    });
    await adapter.send({ sessionKey: message.sessionKey, text: "thread answer", inReplyTo: message });
    expect(fake.sent()).toMatchObject([
      { channelId: ids.thread, messageReference: { message_id: message.id } },
    ]);
  });

  it("gives a redelivered event the same id, so the server's dedup can drop it", async () => {
    const event = harness.fake.dispatchMessage({ where: "channel", content: "once", mention: "user" });
    harness.fake.redeliver(event);
    await settle();
    const copies = harness.inbound.filter((message) => message.text === "once");
    expect(copies).toHaveLength(2);
    expect(copies[0]?.id).toBe(event.d.id);
    expect(copies[1]?.id).toBe(event.d.id);
  });

  it("drops other bots' messages but delivers everything from people", async () => {
    harness.fake.dispatchMessage({ where: "channel", content: "beep", author: harness.fake.world.otherBot });
    harness.fake.dispatchMessage({ where: "channel", content: "human here" });
    await settle();
    expect(harness.inbound.map((message) => message.text)).toEqual(["human here", "sentinel"]);
  });

  it("lists images and other files as attachments with their CDN URL, type and size, for the server to download", async () => {
    const event = harness.fake.dispatchMessage({
      where: "dm",
      content: "look",
      attachments: [
        { filename: "cat.png", contentType: "image/png" },
        { filename: "report.pdf", contentType: "application/pdf" },
      ],
    });
    const message = await harness.received((candidate) => candidate.id === event.d.id);
    expect(message.images).toBeUndefined();
    expect(message.attachments).toEqual([
      {
        kind: "image",
        name: "cat.png",
        url: expect.stringMatching(/\/attachments\/\d+\/\d+\/cat\.png\?ex=/),
        id: expect.any(String),
        contentType: "image/png",
        size: 1024,
      },
      {
        kind: "file",
        name: "report.pdf",
        url: expect.stringMatching(/\/report\.pdf\?/),
        id: expect.any(String),
        contentType: "application/pdf",
        size: 1024,
      },
    ]);
  });

  it("turns a voice message into an audio attachment marked as voice, with its length", async () => {
    const event = harness.fake.dispatchMessage({ where: "dm", content: "", voice: { durationSecs: 2.5 } });
    const message = await harness.received((candidate) => candidate.id === event.d.id);
    expect(message.text).toBe("");
    expect(message.attachments).toEqual([
      expect.objectContaining({ kind: "audio", voice: true, name: "voice-message.ogg", durationMs: 2_500 }),
    ]);
  });
});

describe("sending", () => {
  it("splits a 5,000-character answer within 2,000 per message with the code block intact", async () => {
    const { fake, adapter } = harness;
    const code = Array.from(
      { length: 120 },
      (_, line) => `const value${line} = compute(${line}); // step ${line}`,
    );
    const prose = (words: number) => Array.from({ length: words }, (_, word) => `word${word}`).join(" ");
    const text = `${prose(120)}\n\n\`\`\`ts\n${code.join("\n")}\n\`\`\`\n\n${prose(100)}`;
    expect(text.length).toBeGreaterThan(5000);
    const event = fake.dispatchMessage({ where: "channel", content: "long please", mention: "user" });
    const question = await harness.received((candidate) => candidate.id === event.d.id);
    await adapter.send({ sessionKey: question.sessionKey, text, inReplyTo: question });

    const sent = fake.sent();
    expect(sent.length).toBeGreaterThanOrEqual(3);
    for (const message of sent) {
      expect(message.content.length).toBeLessThanOrEqual(2000);
      expect(message.content.split("\n").filter((line) => line.startsWith("```")).length % 2).toBe(0);
    }
    const codeLines = sent.flatMap((message) => codeBlockLines(message.content));
    expect(codeLines).toEqual(code);
    expect(sent[0]?.messageReference?.message_id).toBe(question.id);
    expect(sent.slice(1).every((message) => message.messageReference === undefined)).toBe(true);
    expect(new Set(sent.map((message) => message.channelId))).toEqual(new Set([fake.world.ids.channel]));
  });

  it("renders a Markdown table as a code block", async () => {
    await harness.adapter.send({
      sessionKey: formatSessionKey({
        channel: "discord",
        account: "default",
        kind: "group",
        id: harness.fake.world.ids.channel,
      }),
      text: "| name | qty |\n| --- | --- |\n| apple | 3 |",
    });
    expect(harness.fake.sent()[0]?.content).toBe("```\nname  | qty\n------|----\napple | 3\n```");
  });

  it("opens a DM from a session key alone when no message is being answered", async () => {
    const { fake, adapter } = harness;
    const sessionKey = formatSessionKey({
      channel: "discord",
      account: "default",
      kind: "dm",
      id: fake.world.user.id,
    });
    await adapter.send({ sessionKey, text: "a reminder" });
    expect(fake.requests().some((request) => request.path === "/users/@me/channels")).toBe(true);
    expect(fake.sent()).toMatchObject([{ channelId: fake.world.ids.dmChannel, content: "a reminder" }]);
  });

  it("refuses a session of another channel with discord.target_invalid", async () => {
    await expect(
      harness.adapter.send({ sessionKey: "feishu:default:group:oc_1", text: "x" }),
    ).rejects.toMatchObject({
      code: "discord.target_invalid",
    });
  });

  it("surfaces Discord's refusal as discord.send_failed with Discord's code", async () => {
    const sessionKey = formatSessionKey({ channel: "discord", account: "default", kind: "group", id: "999" });
    await expect(harness.adapter.send({ sessionKey, text: "to nowhere" })).rejects.toMatchObject({
      code: "discord.send_failed",
      status: 404,
      discordCode: 10003,
    });
  });

  it("shows typing in the conversation right away and renews it while the turn runs", async () => {
    const { fake, adapter } = harness;
    const event = fake.dispatchMessage({ where: "thread", content: "think hard", mention: "user" });
    const message = await harness.received((candidate) => candidate.id === event.d.id);
    const stop = await adapter.startTyping(message);
    expect(fake.typing()).toEqual([{ channelId: fake.world.ids.thread, at: expect.any(Number) }]);
    await waitForTyping(3);
    await stop();
    expect(fake.typing().every((call) => call.channelId === fake.world.ids.thread)).toBe(true);
  });
});

async function waitForTyping(count: number): Promise<void> {
  await waitUntil(() => harness.fake.typing().length >= count, { what: `${count} typing calls` });
}

/** The lines inside fenced code blocks of one message (fence lines excluded). */
function codeBlockLines(content: string): string[] {
  const lines: string[] = [];
  let inside = false;
  for (const line of content.split("\n")) {
    if (line.startsWith("```")) inside = !inside;
    else if (inside) lines.push(line);
  }
  return lines;
}
