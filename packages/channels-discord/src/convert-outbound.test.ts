import { formatSessionKey, type InboundMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import {
  resolveTarget,
  toDiscordButtonRows,
  toDiscordChunks,
  toDiscordMarkdown,
  toDiscordNonce,
} from "./convert-outbound.js";

const inbound = (overrides: Partial<InboundMessage> = {}): InboundMessage => ({
  sessionKey: "discord:main:group:10:20",
  channel: "discord",
  id: "30",
  account: "main",
  conversation: { kind: "thread", id: "20", parentId: "10" },
  sender: { id: "40" },
  mentioned: true,
  text: "hi",
  receivedAt: 0,
  ...overrides,
});

describe("toDiscordMarkdown", () => {
  it("passes through what Discord renders: headings up to ###, lists, quotes, links, code", () => {
    const text = "# Title\n### Sub\n- item\n> quote\n[docs](https://example.com)\n`code`";
    expect(toDiscordMarkdown(text)).toBe(text);
  });

  it("turns a table into an aligned code block and leaves the text around it alone", () => {
    const text = "Totals:\n\n| Fruit | Count |\n|:------|------:|\n| apple | 3 |\n| kiwi | 12 |\n\nDone.";
    expect(toDiscordMarkdown(text)).toBe(
      "Totals:\n\n```\nFruit | Count\n------|------\napple | 3\nkiwi  | 12\n```\n\nDone.",
    );
  });

  it("turns deep headings into bold lines and images into links", () => {
    expect(
      toDiscordMarkdown("#### Details\n![diagram](https://x.test/d.png)\n![](https://x.test/e.png)"),
    ).toBe("**Details**\n[diagram](https://x.test/d.png)\nhttps://x.test/e.png");
  });

  it("never rewrites inside fenced code", () => {
    const text = "```md\n| a | b |\n|---|---|\n#### not a heading\n```";
    expect(toDiscordMarkdown(text)).toBe(text);
  });
});

describe("toDiscordChunks", () => {
  it("keeps every chunk within 2000 characters and re-fences a long code block", () => {
    const code = Array.from({ length: 200 }, (_, line) => `print(${line})  # ${"x".repeat(10)}`);
    const chunks = toDiscordChunks(`Intro\n\n\`\`\`py\n${code.join("\n")}\n\`\`\``);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(2000);
    expect(chunks.slice(1).every((chunk) => chunk.startsWith("```py\n") && chunk.endsWith("\n```"))).toBe(
      true,
    );
  });

  it("sends nothing for an empty answer", () => {
    expect(toDiscordChunks("")).toEqual([]);
  });
});

describe("resolveTarget", () => {
  it("answers in the conversation of the message being replied to, referencing it", () => {
    expect(resolveTarget({ sessionKey: "ignored", text: "x", inReplyTo: inbound() }, "main")).toEqual({
      kind: "channel",
      channelId: "20",
      replyToMessageId: "30",
    });
  });

  it("answers a button press in its conversation, replying to the message the button was on", () => {
    const press = inbound({
      id: "50",
      replyTo: "31",
      raw: {
        id: "50",
        type: 3,
        token: "t",
        channel_id: "20",
        user: { id: "40", username: "a" },
        data: { custom_id: "almanac:approve K7QD", component_type: 2 },
        message: { id: "31" },
      },
    });
    expect(resolveTarget({ sessionKey: "ignored", text: "x", inReplyTo: press }, "main")).toEqual({
      kind: "channel",
      channelId: "20",
      replyToMessageId: "31",
    });
  });

  it("finds the place from the session key alone: a thread, a channel, or a user to DM", () => {
    const key = (kind: string, id: string, thread?: string) =>
      formatSessionKey({ channel: "discord", account: "main", kind, id, ...(thread ? { thread } : {}) });
    expect(resolveTarget({ sessionKey: key("group", "10", "20"), text: "x" }, "main")).toEqual({
      kind: "channel",
      channelId: "20",
    });
    expect(resolveTarget({ sessionKey: key("group", "10"), text: "x" }, "main")).toEqual({
      kind: "channel",
      channelId: "10",
    });
    expect(resolveTarget({ sessionKey: key("dm", "40"), text: "x" }, "main")).toEqual({
      kind: "user",
      userId: "40",
    });
  });

  it("refuses sessions of another account or channel, and message of another adapter", () => {
    expect(() => resolveTarget({ sessionKey: "discord:other:group:10", text: "x" }, "main")).toThrow(
      expect.objectContaining({ code: "discord.target_invalid" }),
    );
    expect(() =>
      resolveTarget(
        { sessionKey: "feishu:main:group:oc_1", text: "x", inReplyTo: inbound({ channel: "feishu" }) },
        "main",
      ),
    ).toThrow(expect.objectContaining({ code: "discord.target_invalid" }));
  });
});

describe("toDiscordButtonRows", () => {
  it("makes one action row of buttons whose custom_id carries the reply, styled as asked", () => {
    const { rows, dropped } = toDiscordButtonRows([
      { label: "Approve", reply: "approve K7QD", style: "primary" },
      { label: "Deny", reply: "deny K7QD", style: "danger" },
      { label: "Later", reply: "later" },
    ]);
    expect(dropped).toEqual([]);
    expect(rows).toEqual([
      {
        type: 1,
        components: [
          { type: 2, style: 1, label: "Approve", custom_id: "almanac:approve K7QD" },
          { type: 2, style: 4, label: "Deny", custom_id: "almanac:deny K7QD" },
          { type: 2, style: 2, label: "Later", custom_id: "almanac:later" },
        ],
      },
    ]);
  });

  it("puts at most five buttons in a row and 25 in a message", () => {
    const buttons = Array.from({ length: 27 }, (_, index) => ({
      label: `#${index}`,
      reply: `pick ${index}`,
    }));
    const { rows, dropped } = toDiscordButtonRows(buttons);
    expect(rows.map((row) => row.components.length)).toEqual([5, 5, 5, 5, 5]);
    expect(dropped).toEqual([
      { label: "#25", reason: "a message holds at most 25 buttons" },
      { label: "#26", reason: "a message holds at most 25 buttons" },
    ]);
  });

  it("keeps every custom_id within 100 characters and every label within 80, leaving out what cannot fit", () => {
    const fits = "r".repeat(100 - "almanac:".length);
    const { rows, dropped } = toDiscordButtonRows([
      { label: "ok", reply: fits },
      { label: "too long", reply: `${fits}r` },
      { label: "twice", reply: fits },
      { label: "empty", reply: " " },
      { label: "😀".repeat(50), reply: "smile" },
    ]);
    const kept = rows.flatMap((row) => row.components);
    expect(kept.map((button) => button.custom_id)).toEqual([`almanac:${fits}`, "almanac:smile"]);
    expect(kept.every((button) => button.custom_id.length <= 100)).toBe(true);
    expect(kept[1]?.label).toBe("😀".repeat(40));
    expect(dropped.map((button) => button.label)).toEqual(["too long", "twice", "empty"]);
  });
});

describe("toDiscordNonce", () => {
  it("is the same for the same key and part, within Discord's 25 characters, and differs by part and key", () => {
    const key = "TABCDE-1796520000000-and-a-longer-tail-0123";
    const first = toDiscordNonce(key, 0);
    expect(first).toEqual({ nonce: expect.stringMatching(/^[0-9a-f]{25}$/), enforce_nonce: true });
    expect(toDiscordNonce(key, 0)).toEqual(first);
    expect(toDiscordNonce(key, 1).nonce).not.toBe(first.nonce);
    expect(toDiscordNonce("TABCDE-1796520000001", 0).nonce).not.toBe(first.nonce);
  });
});
