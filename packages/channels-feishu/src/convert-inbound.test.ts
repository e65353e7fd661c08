import { describe, expect, it } from "vitest";
import {
  BOT_OPEN_ID,
  groupImage,
  groupMentionReply,
  p2pText,
  threadPost,
} from "./__fixtures__/receive-events.js";
import { convertContent, toInboundMessage } from "./convert-inbound.js";
import { mentionSchema, receiveEventSchema } from "./event-schema.js";

const context = { account: "work", botOpenId: BOT_OPEN_ID, receivedAt: 1_700_000_000_000 };
const convert = (payload: unknown) => toInboundMessage(receiveEventSchema.parse(payload), context);

describe("toInboundMessage", () => {
  it("keys a direct message by the sender's open_id and marks it mentioned", () => {
    const message = convert(p2pText);
    expect(message).toMatchObject({
      sessionKey: "feishu:work:dm:ou_84aad35d084aa403a838cf73ee18467",
      channel: "feishu",
      id: "om_5ce6d572455d361153b7cb51da133945",
      account: "work",
      conversation: { kind: "dm", id: "oc_5ce6d572455d361153b7xx51da133945" },
      sender: { id: "ou_84aad35d084aa403a838cf73ee18467" },
      mentioned: true,
      text: "hello there",
      receivedAt: 1_700_000_000_000,
      raw: { eventId: "5e3702a84e847582be8db7fb73283c02", chatType: "p2p", messageType: "text" },
    });
    expect(message.replyTo).toBeUndefined();
  });

  it("strips the bot's placeholder, names other mentions and keeps a quote reply in the chat's session", () => {
    const message = convert(groupMentionReply);
    expect(message.text).toBe("please ask @Alice and @Bob about it");
    expect(message.mentioned).toBe(true);
    expect(message.sessionKey).toBe("feishu:work:group:oc_group_42");
    expect(message.conversation).toEqual({ kind: "group", id: "oc_group_42" });
    expect(message.replyTo).toBe("om_parent_1");
  });

  it("puts a topic-thread message in a thread session and flattens the post", () => {
    const message = convert(threadPost);
    expect(message.sessionKey).toBe("feishu:work:group:oc_group_42:omt_1a2b3c4d5e");
    expect(message.conversation).toEqual({ kind: "thread", id: "omt_1a2b3c4d5e", parentId: "oc_group_42" });
    expect(message.mentioned).toBe(true);
    expect(message.text).toBe(
      "Deploy notes\nsee [the runbook](https://example.com/runbook):THUMBSUP:\n\n```typescript\nconst x = 1;\n```",
    );
    expect(message.attachments).toEqual([
      { kind: "image", id: "img_v2_041b28e3-5680-48c2-9af2-497ace79333g" },
    ]);
  });

  it("turns an image into an attachment reference and treats empty ids as absent", () => {
    const message = convert(groupImage);
    expect(message).toMatchObject({
      mentioned: false,
      text: "",
      attachments: [{ kind: "image", id: "img_v2_8c4f2e1a" }],
    });
    expect(message.replyTo).toBeUndefined();
    expect(message.conversation.kind).toBe("group");
  });
});

describe("convertContent", () => {
  const mention = (key: string, openId: string, name: string) =>
    mentionSchema.parse({ key, id: { open_id: openId }, name });

  it("does not count a mention of someone else as a mention of the bot", () => {
    const message = toInboundMessage(
      receiveEventSchema.parse({
        sender: { sender_id: { open_id: "ou_1" } },
        message: {
          message_id: "om_1",
          chat_id: "oc_1",
          chat_type: "group",
          message_type: "text",
          content: '{"text":"@_user_1 look"}',
          mentions: [mention("@_user_1", "ou_alice", "Alice")],
        },
      }),
      context,
    );
    expect(message.mentioned).toBe(false);
    expect(message.text).toBe("@Alice look");
  });

  it("removes a bot mention in the middle of a sentence without leaving a double space", () => {
    const { text } = convertContent(
      "text",
      '{"text":"hi @_user_1 there"}',
      [mention("@_user_1", BOT_OPEN_ID, "Bot")],
      BOT_OPEN_ID,
    );
    expect(text).toBe("hi there");
  });

  it("reads a post wrapped per locale and writes @all", () => {
    const content = JSON.stringify({
      zh_cn: {
        title: "",
        content: [
          [
            { tag: "at", user_id: "all" },
            { tag: "text", text: " standup" },
          ],
        ],
      },
    });
    expect(convertContent("post", content, [], BOT_OPEN_ID).text).toBe("@all standup");
  });

  it("lists files with their names and yields no text for unknown or broken content", () => {
    expect(convertContent("file", '{"file_key":"file_v2_1","file_name":"a.pdf"}', [], BOT_OPEN_ID)).toEqual({
      text: "",
      attachments: [{ kind: "file", id: "file_v2_1", name: "a.pdf" }],
    });
    expect(convertContent("text", "not json", [], BOT_OPEN_ID)).toEqual({ text: "", attachments: [] });
    expect(convertContent("share_chat", '{"chat_id":"oc_2"}', [], BOT_OPEN_ID)).toEqual({
      text: "",
      attachments: [],
    });
  });
});
