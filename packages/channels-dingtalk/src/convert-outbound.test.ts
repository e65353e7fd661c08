import type { InboundMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import {
  DINGTALK_MARKDOWN_LIMIT,
  MAX_TEXT_JSON_BYTES,
  markdownTitle,
  toDeliveryPlan,
  toMarkdownMessages,
} from "./convert-outbound.js";
import { toDingTalkMarkdown } from "./convert-outbound-markdown.js";
import { isDingTalkError } from "./errors.js";

const fenceCount = (text: string) => (text.match(/^```/gm) ?? []).length;

describe("toMarkdownMessages", () => {
  it("keeps a short answer in one message with a title from its first line", () => {
    expect(toMarkdownMessages("## Weekly **report**\n\nAll good.")).toEqual([
      { title: "Weekly report", text: "## Weekly **report**\n\nAll good." },
    ]);
  });

  it("splits an over-long code block into quoted pieces within the limit, every line kept", () => {
    const code = Array.from({ length: 400 }, (_, index) => `const value${index} = ${index} * 2; // line`);
    const messages = toMarkdownMessages(`Here:\n\n\`\`\`ts\n${code.join("\n")}\n\`\`\``);
    expect(messages.length).toBeGreaterThan(2);
    for (const message of messages) {
      expect(message.text.length).toBeLessThanOrEqual(DINGTALK_MARKDOWN_LIMIT);
      expect(fenceCount(message.text)).toBe(0);
    }
    const quoted = messages
      .flatMap((message) => message.text.split("\n"))
      .filter((line) => line.startsWith("> const"));
    expect(quoted).toEqual(code.map((line) => `> ${line.replace("*", "\\*")}  `));
  });

  it("keeps CJK text within the byte budget of the OpenAPI's msgParam", () => {
    const messages = toMarkdownMessages("字".repeat(DINGTALK_MARKDOWN_LIMIT));
    expect(messages.length).toBeGreaterThan(1);
    for (const message of messages) {
      expect(Buffer.byteLength(JSON.stringify(message.text))).toBeLessThanOrEqual(MAX_TEXT_JSON_BYTES);
    }
    expect(messages.map((message) => message.text).join("")).toBe("字".repeat(DINGTALK_MARKDOWN_LIMIT));
  });

  it("sends nothing for empty text", () => {
    expect(toMarkdownMessages("")).toEqual([]);
  });
});

describe("markdownTitle", () => {
  it("skips fences, strips markers and links, and shortens long lines", () => {
    expect(markdownTitle("```\ncode\n```")).toBe("code");
    expect(markdownTitle("> - see [the docs](https://x.y) *now*")).toBe("see the docs now");
    expect(markdownTitle("\n\n")).toBe("Reply");
    const long = markdownTitle("a".repeat(50));
    expect(Array.from(long)).toHaveLength(32);
    expect(long.endsWith("…")).toBe(true);
  });
});

describe("toDeliveryPlan", () => {
  const inbound = (payload: Record<string, unknown>): InboundMessage => ({
    sessionKey: "dingtalk:default:dm:staff-1",
    channel: "dingtalk",
    id: "m1",
    account: "default",
    conversation: { kind: "dm", id: "cid-1" },
    sender: { id: "staff-1" },
    mentioned: true,
    text: "hi",
    receivedAt: 0,
    raw: { streamMessageId: "f1", payload },
  });
  const payload = {
    msgId: "m1",
    msgtype: "text",
    conversationId: "cid-1",
    conversationType: "1",
    senderId: "$:LWCP_v1:$x",
    senderStaffId: "staff-1",
    sessionWebhook: "https://oapi.dingtalk.com/robot/sendBySession?session=s",
    sessionWebhookExpiredTime: 123,
  };

  it("replies through the inbound's sessionWebhook and conversation", () => {
    expect(
      toDeliveryPlan({ sessionKey: "ignored", text: "x", inReplyTo: inbound(payload) }, "default"),
    ).toEqual({
      target: { kind: "dm", staffId: "staff-1" },
      webhook: { url: payload.sessionWebhook, expiresAt: 123 },
    });
    const group = inbound({ ...payload, conversationType: "2", conversationId: "cid-g" });
    expect(toDeliveryPlan({ sessionKey: "x", text: "x", inReplyTo: group }, "default").target).toEqual({
      kind: "group",
      openConversationId: "cid-g",
    });
  });

  it("targets the session key's conversation for a proactive message", () => {
    expect(toDeliveryPlan({ sessionKey: "dingtalk:default:group:cid-g==", text: "x" }, "default")).toEqual({
      target: { kind: "group", openConversationId: "cid-g==" },
    });
    expect(
      toDeliveryPlan({ sessionKey: "dingtalk:default:dm:$%3ALWCP_v1%3A$x", text: "x" }, "default"),
    ).toEqual({
      target: { kind: "dm", staffId: undefined },
    });
  });

  it("refuses a session key of another channel or account", () => {
    for (const sessionKey of ["discord:default:dm:1", "dingtalk:other:dm:1", "not a key"]) {
      let caught: unknown;
      try {
        toDeliveryPlan({ sessionKey, text: "x" }, "default");
      } catch (error) {
        caught = error;
      }
      expect(isDingTalkError(caught, "dingtalk.target_invalid")).toBe(true);
    }
  });
});

describe("toDingTalkMarkdown (the Markdown subset DingTalk documents for robot messages)", () => {
  it("leaves the documented subset alone: headings, quotes, bold, italic, links, images, lists", () => {
    const markdown = [
      "# Title",
      "> quoted",
      "**bold** and *italic* and `inline code`",
      "[a link](https://example.com) ![](https://example.com/a.png)",
      "- item",
      "1. first",
    ].join("\n\n");
    expect(toDingTalkMarkdown(markdown)).toBe(markdown);
  });

  it("turns a fenced code block into quoted lines that keep line breaks, indentation and literal markup", () => {
    const markdown = 'Run this:\n\n```python\ndef main():\n    print("*hi*")  # [x]\n\nmain()\n```\n\nDone.';
    expect(toDingTalkMarkdown(markdown)).toBe(
      [
        "Run this:",
        "",
        "> *python*  ",
        "> def main():  ",
        '> \u00a0\u00a0\u00a0\u00a0print("\\*hi\\*")  # \\[x\\]  ',
        ">   ",
        "> main()  ",
        "",
        "Done.",
      ].join("\n"),
    );
  });

  it("closes an unclosed fence at the end and handles tildes and longer fences", () => {
    expect(toDingTalkMarkdown("~~~\na\n~~~")).toBe("> a  ");
    expect(toDingTalkMarkdown("````\n```\n````")).toBe("> \\`\\`\\`  ");
    expect(toDingTalkMarkdown("```\nlast line")).toBe("> last line  ");
  });

  it("turns a table into one list item per row with the column names", () => {
    const markdown =
      "Results:\n\n| Host | Status | Note |\n| --- | :---: | --- |\n| web-1 | up | |\n| web-2 | down | a\\|b |\n\nAfter.";
    expect(toDingTalkMarkdown(markdown)).toBe(
      [
        "Results:",
        "",
        "- **Host**: web-1 · **Status**: up",
        "- **Host**: web-2 · **Status**: down · **Note**: a|b",
        "",
        "After.",
      ].join("\n"),
    );
  });

  it("reads a table without outer pipes and leaves lone pipes in prose alone", () => {
    expect(toDingTalkMarkdown("a | b\n--|--\n1 | 2")).toBe("- **a**: 1 · **b**: 2");
    expect(toDingTalkMarkdown("yes | no\nplain text")).toBe("yes | no\nplain text");
  });

  it("sends no fences or table dividers to DingTalk", () => {
    const [message] = toMarkdownMessages("| a |\n|---|\n| 1 |\n\n```\nx\n```");
    expect(message?.text).toBe("- **a**: 1\n\n> x  ");
    expect(message?.title).toBe("a: 1");
  });
});
