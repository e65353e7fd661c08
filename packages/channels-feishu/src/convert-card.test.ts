import type { MessageButton } from "@almanac/core";
import { describe, expect, it } from "vitest";
import {
  foreignButton,
  forwardedApprove,
  groupDeny,
  OPERATOR_OPEN_ID,
  p2pApprove,
  threadApprove,
  withoutEventId,
} from "./__fixtures__/card-action-events.js";
import { BOT_OPEN_ID, p2pText } from "./__fixtures__/receive-events.js";
import {
  buildCard,
  cardMessageOf,
  markdownToCardMessage,
  toCardContent,
  toCardPress,
} from "./convert-card.js";
import { toInboundMessage } from "./convert-inbound.js";
import { encodedContentBytes, FEISHU_POST_BODY_LIMIT_BYTES } from "./convert-outbound.js";
import { cardActionEventSchema, postLocalesSchema, receiveEventSchema } from "./event-schema.js";

const buttons: readonly MessageButton[] = [
  { label: "Approve", reply: "approve K7QD", style: "primary" },
  { label: "Deny", reply: "deny K7QD", style: "danger" },
  { label: "Later", reply: "later" },
];

const context = { account: "work", receivedAt: 1_700_000_000_000 };
const pressOf = (payload: unknown) => toCardPress(cardActionEventSchema.parse(payload), context);

describe("buildCard", () => {
  it("shows the Markdown and one action row whose buttons carry the reply and where the card went", () => {
    const card = buildCard("**Approval needed**", buttons, {
      chatType: "group",
      chatId: "oc_team",
      threadId: "omt_1",
    });
    expect(card).toEqual({
      config: { update_multi: true },
      elements: [
        { tag: "markdown", content: "**Approval needed**" },
        {
          tag: "action",
          actions: [
            {
              tag: "button",
              text: { tag: "plain_text", content: "Approve" },
              type: "primary",
              value: {
                almanac_reply: "approve K7QD",
                almanac_chat_type: "group",
                almanac_chat_id: "oc_team",
                almanac_thread_id: "omt_1",
              },
            },
            expect.objectContaining({
              type: "danger",
              value: expect.objectContaining({ almanac_reply: "deny K7QD" }),
            }),
            expect.objectContaining({
              type: "default",
              value: expect.objectContaining({ almanac_reply: "later" }),
            }),
          ],
        },
      ],
    });
  });

  it("shows a note instead of the buttons once they are gone", () => {
    expect(buildCard("Question", [], { chatType: "p2p" }, "Sent: approve K7QD")).toEqual({
      config: { update_multi: true },
      elements: [
        { tag: "markdown", content: "Question" },
        { tag: "note", elements: [{ tag: "plain_text", content: "Sent: approve K7QD" }] },
      ],
    });
  });
});

describe("markdownToCardMessage", () => {
  it("puts a short message whole on the card", () => {
    expect(markdownToCardMessage("Run `deploy`?", buttons)).toEqual({
      posts: [],
      cardMarkdown: "Run `deploy`?",
    });
  });

  it("sends what does not fit as posts first, the card last, every request within 30 KB", () => {
    const line = '  "content": "第一行\\n第二行 with \\"quotes\\""';
    const markdown = [
      "Approval needed (K7QD):",
      "```json",
      ...Array.from({ length: 900 }, () => line),
      "```",
    ].join("\n");
    const { posts, cardMarkdown } = markdownToCardMessage(markdown, buttons);
    expect(posts.length).toBeGreaterThan(0);
    const place = { chatType: "group", chatId: "oc_team", threadId: "omt_1" } as const;
    const card = toCardContent(cardMarkdown, buttons, place);
    for (const content of [...posts, card]) {
      expect(encodedContentBytes(content) + 1024).toBeLessThanOrEqual(FEISHU_POST_BODY_LIMIT_BYTES);
    }
    const postTexts = posts.map(
      (post) => postLocalesSchema.parse(JSON.parse(post)).zh_cn?.content[0]?.[0]?.text,
    );
    const lines = [...postTexts, cardMarkdown].join("\n").split("\n");
    expect(lines.filter((text) => text === line)).toHaveLength(900);
    expect(cardMarkdown).toMatch(/```$/);
  });
});

describe("toCardPress", () => {
  it("turns a press in a direct chat into the message its person would have typed there", () => {
    const press = pressOf(p2pApprove);
    const typed = toInboundMessage(receiveEventSchema.parse(p2pText), { ...context, botOpenId: BOT_OPEN_ID });
    expect(press).toMatchObject({ kind: "message" });
    if (press.kind !== "message") return;
    expect(press.message).toMatchObject({
      sessionKey: typed.sessionKey,
      channel: "feishu",
      id: "f7984f25108f8137722bb63cee927e66",
      account: "work",
      conversation: typed.conversation,
      sender: { id: OPERATOR_OPEN_ID },
      mentioned: true,
      text: "approve K7QD",
      replyTo: "om_card_1",
      receivedAt: context.receivedAt,
      raw: { kind: "card_action", cardMessageId: "om_card_1", chatType: "p2p" },
    });
    expect(cardMessageOf(press.message)).toBe("om_card_1");
    expect(cardMessageOf(typed)).toBeUndefined();
  });

  it("keys a press in a group by the group, and in a topic by the topic", () => {
    expect(pressOf(groupDeny)).toMatchObject({
      kind: "message",
      message: {
        sessionKey: "feishu:work:group:oc_team",
        conversation: { kind: "group", id: "oc_team" },
        text: "deny K7QD",
      },
    });
    expect(pressOf(threadApprove)).toMatchObject({
      kind: "message",
      message: {
        sessionKey: "feishu:work:group:oc_team:omt_1a2b3c",
        conversation: { kind: "thread", id: "omt_1a2b3c", parentId: "oc_team" },
        raw: { threadId: "omt_1a2b3c" },
      },
      place: { chatType: "group", chatId: "oc_team", threadId: "omt_1a2b3c" },
    });
  });

  it("takes the action token as the id when the event id is missing", () => {
    expect(pressOf(withoutEventId)).toMatchObject({
      kind: "message",
      message: { id: "c-295ee57216a5dc9de90fefd0aadb4b1d7d7b6d80" },
    });
  });

  it("refuses a card pressed in another chat than it was sent to (a forwarded card)", () => {
    expect(pressOf(forwardedApprove)).toEqual({
      kind: "refused",
      reason: "This button works only in the chat it was sent to. Nothing was sent.",
    });
  });

  it("ignores buttons that are not Almanac's", () => {
    expect(pressOf(foreignButton)).toEqual({ kind: "ignored" });
  });
});
