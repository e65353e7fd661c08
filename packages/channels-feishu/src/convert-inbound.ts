import { type Conversation, formatSessionKey, type InboundMessage } from "@almanac/core";
import {
  type FeishuMention,
  type FeishuPostElement,
  type FeishuReceiveEvent,
  postContentSchema,
  postLocalesSchema,
  resourceContentSchema,
  textContentSchema,
} from "./event-schema.js";
import type { FeishuInboundRaw } from "./types.js";

/** Channel name of this adapter in session keys. */
export const FEISHU_CHANNEL = "feishu";

/** What {@link toInboundMessage} needs besides the event. */
export interface InboundContext {
  readonly account: string;
  /** The bot's own open_id (from `/open-apis/bot/v3/info`): its mentions are stripped and set `mentioned`. */
  readonly botOpenId: string;
  readonly receivedAt: number;
}

type Attachment = NonNullable<InboundMessage["attachments"]>[number];

/**
 * Normalizes `im.message.receive_v1` into an {@link InboundMessage}.
 * The id is the chat message id (`message_id`), stable across redeliveries (which get a new `event_id`).
 * Threads are Feishu topics (`thread_id`): in a group a topic is its own session (`conversation.kind: "thread"`,
 * `parentId` = the group); in a direct chat it stays in the DM's session (a DM is one conversation), and the reply
 * still goes into the topic (see `raw.threadId`). A plain quote reply (only `root_id`/`parent_id`) stays in its
 * chat's session with `replyTo` set, so answering the bot by quoting it keeps the conversation.
 */
export function toInboundMessage(event: FeishuReceiveEvent, context: InboundContext): InboundMessage {
  const { message, sender } = event;
  const mentions = message.mentions ?? [];
  const isDirect = message.chat_type === "p2p";
  const senderId =
    sender.sender_id?.open_id ?? sender.sender_id?.user_id ?? sender.sender_id?.union_id ?? "unknown";
  const threadId = message.thread_id;
  const { sessionKey, conversation } = placeOf(
    { chatType: message.chat_type, chatId: message.chat_id, threadId },
    senderId,
    context.account,
  );
  const { text, attachments } = convertContent(
    message.message_type,
    message.content,
    mentions,
    context.botOpenId,
  );
  const raw: FeishuInboundRaw = {
    ...(event.event_id === undefined ? {} : { eventId: event.event_id }),
    ...(event.tenant_key === undefined ? {} : { tenantKey: event.tenant_key }),
    ...(event.app_id === undefined ? {} : { appId: event.app_id }),
    chatType: message.chat_type,
    messageType: message.message_type,
    ...(message.root_id === undefined ? {} : { rootId: message.root_id }),
    ...(threadId === undefined ? {} : { threadId }),
    event,
  };
  return {
    sessionKey,
    channel: FEISHU_CHANNEL,
    id: message.message_id,
    account: context.account,
    conversation,
    sender: { id: senderId },
    mentioned: isDirect || mentions.some((mention) => isBotMention(mention, context.botOpenId)),
    text,
    ...(attachments.length === 0 ? {} : { attachments }),
    ...(message.parent_id === undefined ? {} : { replyTo: message.parent_id }),
    receivedAt: context.receivedAt,
    raw,
  };
}

/** A chat, and the topic in it, where something was said. */
export interface FeishuChatPlace {
  /** `p2p` for a direct chat; anything else is a group. */
  readonly chatType: string;
  readonly chatId: string;
  readonly threadId?: string | undefined;
}

/**
 * The session key and conversation of something said in a chat by `senderId`: the one rule for typed messages
 * and button presses alike. A direct chat is the person's DM session (a topic inside it stays there); a group is
 * its chat's session, and a topic in a group is a session of its own.
 */
export function placeOf(
  place: FeishuChatPlace,
  senderId: string,
  account: string,
): { readonly sessionKey: string; readonly conversation: Conversation } {
  const isDirect = place.chatType === "p2p";
  const groupThread = isDirect ? undefined : place.threadId;
  const sessionKey = formatSessionKey({
    channel: FEISHU_CHANNEL,
    account,
    kind: isDirect ? "dm" : "group",
    id: isDirect ? senderId : place.chatId,
    ...(groupThread === undefined ? {} : { thread: groupThread }),
  });
  const conversation: Conversation =
    groupThread !== undefined
      ? { kind: "thread", id: groupThread, parentId: place.chatId }
      : { kind: isDirect ? "dm" : "group", id: place.chatId };
  return { sessionKey, conversation };
}

/** Turns a message's `content` JSON into plain text plus attachment references. Unknown types give no text. */
export function convertContent(
  messageType: string,
  content: string,
  mentions: readonly FeishuMention[],
  botOpenId: string,
): { text: string; attachments: Attachment[] } {
  const value = parseJson(content);
  const attachments: Attachment[] = [];
  if (messageType === "text") {
    const parsed = textContentSchema.safeParse(value);
    return {
      text: parsed.success ? replaceMentions(parsed.data.text, mentions, botOpenId) : "",
      attachments,
    };
  }
  if (messageType === "post") {
    const direct = postContentSchema.safeParse(value);
    const post = direct.success
      ? direct.data
      : Object.values(postLocalesSchema.safeParse(value).data ?? {})[0];
    if (post === undefined) return { text: "", attachments };
    const lines = post.title ? [post.title] : [];
    for (const paragraph of post.content)
      lines.push(flattenParagraph(paragraph, mentions, botOpenId, attachments));
    return { text: tidy(lines.join("\n")), attachments };
  }
  const resource = resourceContentSchema.safeParse(value);
  if (!resource.success) return { text: "", attachments };
  const { image_key: imageKey, file_key: fileKey, file_name: fileName, duration } = resource.data;
  const nameField = fileName === undefined ? {} : { name: fileName };
  const durationField = duration === undefined ? {} : { durationMs: duration };
  if (messageType === "image" && imageKey !== undefined) attachments.push({ kind: "image", id: imageKey });
  if (messageType === "file" && fileKey !== undefined)
    attachments.push({ kind: "file", id: fileKey, ...nameField });
  // Feishu's audio messages are voice messages recorded in the app (a sent audio file is a `file`).
  if (messageType === "audio" && fileKey !== undefined)
    attachments.push({ kind: "audio", voice: true, id: fileKey, ...durationField });
  if (messageType === "media" && fileKey !== undefined)
    attachments.push({ kind: "video", id: fileKey, ...nameField, ...durationField });
  if (messageType === "sticker" && fileKey !== undefined) attachments.push({ kind: "sticker", id: fileKey });
  return { text: "", attachments };
}

function isBotMention(mention: FeishuMention, botOpenId: string): boolean {
  return mention.id?.open_id === botOpenId;
}

/** Removes the bot's `@_user_N` placeholders and writes other mentions as `@name`. */
function replaceMentions(text: string, mentions: readonly FeishuMention[], botOpenId: string): string {
  // Longest keys first, so `@_user_1` never eats the start of `@_user_10`.
  const ordered = [...mentions].sort((left, right) => right.key.length - left.key.length);
  let result = text;
  for (const mention of ordered) {
    if (mention.key === "") continue;
    result = isBotMention(mention, botOpenId)
      ? result.replace(new RegExp(`${escapeRegExp(mention.key)} ?`, "g"), "")
      : result.replaceAll(mention.key, `@${mention.name ?? mention.key.replace(/^@_/, "")}`);
  }
  return tidy(result.replaceAll("@_all", "@all"));
}

function flattenParagraph(
  paragraph: readonly FeishuPostElement[],
  mentions: readonly FeishuMention[],
  botOpenId: string,
  attachments: Attachment[],
): string {
  let line = "";
  let dropLeadingSpace = false;
  for (const element of paragraph) {
    let piece = "";
    switch (element.tag) {
      case "text":
      case "md":
        piece = element.text ?? "";
        break;
      case "a":
        piece = element.href ? `[${element.text ?? element.href}](${element.href})` : (element.text ?? "");
        break;
      case "at": {
        const key = element.user_id ?? "";
        const mention = mentions.find((entry) => entry.key === key);
        if (key === botOpenId || (mention !== undefined && isBotMention(mention, botOpenId))) {
          dropLeadingSpace = true;
          continue;
        }
        piece = key === "all" || key === "@_all" ? "@all" : `@${element.user_name ?? mention?.name ?? key}`;
        break;
      }
      case "img":
        if (element.image_key) attachments.push({ kind: "image", id: element.image_key });
        break;
      case "media":
        if (element.file_key) attachments.push({ kind: "video", id: element.file_key });
        break;
      case "emotion":
        piece = element.emoji_type ? `:${element.emoji_type}:` : "";
        break;
      case "code_block":
        piece = `\n\`\`\`${element.language?.toLowerCase() ?? ""}\n${(element.text ?? "").replace(/\n$/, "")}\n\`\`\`\n`;
        break;
      case "hr":
        piece = "\n---\n";
        break;
      default:
        piece = element.text ?? "";
    }
    if (dropLeadingSpace) piece = piece.replace(/^ /, "");
    dropLeadingSpace = false;
    line += piece;
  }
  return line;
}

/** Trims the text and squeezes the blank lines that removed elements leave behind. */
function tidy(text: string): string {
  return text.replace(/\n{3,}/g, "\n\n").trim();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
