import { formatSessionKey, type InboundMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { resolveTarget, toDiscordChunks, toDiscordMarkdown } from "./convert-outbound.js";

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
