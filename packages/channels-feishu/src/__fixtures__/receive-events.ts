/**
 * `im.message.receive_v1` payloads in the shape the SDK's EventDispatcher hands to a handler (the v2 envelope's
 * `header` merged with `event`), following the field layout Feishu documents and delivers.
 */

const header = {
  schema: "2.0",
  event_id: "5e3702a84e847582be8db7fb73283c02",
  event_type: "im.message.receive_v1",
  create_time: "1608725989000",
  token: "",
  app_id: "cli_a1b2c3d4e5f60718",
  tenant_key: "2ed263bf32cf1651",
};

const sender = {
  sender_id: {
    union_id: "on_8ed6aa67826108097d9ee143816345",
    user_id: "e33ggbyz",
    open_id: "ou_84aad35d084aa403a838cf73ee18467",
  },
  sender_type: "user",
  tenant_key: "2ed263bf32cf1651",
};

/** The bot's open_id in these fixtures. */
export const BOT_OPEN_ID = "ou_bot00000000000000000000000001";

const botMention = {
  key: "@_user_1",
  id: { union_id: "on_bot", user_id: "", open_id: BOT_OPEN_ID },
  name: "Almanac",
  tenant_key: "2ed263bf32cf1651",
};

/** A direct (p2p) text message. */
export const p2pText: unknown = {
  ...header,
  sender,
  message: {
    message_id: "om_5ce6d572455d361153b7cb51da133945",
    create_time: "1609073151345",
    update_time: "1609073151345",
    chat_id: "oc_5ce6d572455d361153b7xx51da133945",
    chat_type: "p2p",
    message_type: "text",
    content: '{"text":"hello there"}',
    user_agent: "Mozilla/5.0",
  },
};

/** A group text message mentioning the bot and another user, quoting an earlier message (root/parent set). */
export const groupMentionReply: unknown = {
  ...header,
  sender,
  message: {
    message_id: "om_group_reply_1",
    root_id: "om_root_1",
    parent_id: "om_parent_1",
    create_time: "1609073151345",
    chat_id: "oc_group_42",
    chat_type: "group",
    message_type: "text",
    content: '{"text":"@_user_1 please ask @_user_2 and @_user_10 about it"}',
    mentions: [
      botMention,
      { key: "@_user_2", id: { open_id: "ou_alice" }, name: "Alice", tenant_key: "2ed263bf32cf1651" },
      { key: "@_user_10", id: { open_id: "ou_bob" }, name: "Bob", tenant_key: "2ed263bf32cf1651" },
    ],
  },
};

/** A rich-text message in a topic thread: mention, link, image, emoji and a code block. */
export const threadPost: unknown = {
  ...header,
  sender,
  message: {
    message_id: "om_thread_post_1",
    root_id: "om_thread_root",
    parent_id: "om_thread_root",
    thread_id: "omt_1a2b3c4d5e",
    create_time: "1609073151345",
    chat_id: "oc_group_42",
    chat_type: "group",
    message_type: "post",
    content: JSON.stringify({
      title: "Deploy notes",
      content: [
        [
          { tag: "at", user_id: "@_user_1", user_name: "Almanac", style: [] },
          { tag: "text", text: " see ", style: ["bold"] },
          { tag: "a", href: "https://example.com/runbook", text: "the runbook", style: [] },
          { tag: "emotion", emoji_type: "THUMBSUP" },
        ],
        [{ tag: "img", image_key: "img_v2_041b28e3-5680-48c2-9af2-497ace79333g", width: 300, height: 300 }],
        [{ tag: "code_block", language: "TypeScript", text: "const x = 1;\n" }],
      ],
    }),
    mentions: [botMention],
  },
};

/** An image message in a group, without mention, with an empty-string root_id as Feishu sometimes sends. */
export const groupImage: unknown = {
  ...header,
  sender: { ...sender, sender_id: { ...sender.sender_id, user_id: null } },
  message: {
    message_id: "om_image_1",
    root_id: "",
    create_time: "1609073151345",
    chat_id: "oc_group_42",
    chat_type: "group",
    message_type: "image",
    content: '{"image_key":"img_v2_8c4f2e1a"}',
  },
};
