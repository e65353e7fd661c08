import { formatSessionKey, type InboundAttachment, type InboundMessage } from "@almanac/core";
import type { z } from "zod";
import {
  mediaContentSchema,
  type RobotPayload,
  richTextContentSchema,
  type richTextItemSchema,
} from "./robot-payload.js";
import type { DingTalkInboundRaw } from "./types.js";

/** Channel name of the adapter, used in session keys. */
export const DINGTALK_CHANNEL = "dingtalk";

type Attachment = InboundAttachment;

/** Text and attachment references of a message body. */
export interface FlattenedContent {
  readonly text: string;
  readonly attachments: readonly Attachment[];
  readonly replyTo?: string;
}

/**
 * Flattens `richText` elements: text pieces joined in order, a picture becomes an attachment reference
 * (`kind: "image"`, `id` = download code) and a line break between the texts around it.
 */
export function flattenRichText(items: readonly z.infer<typeof richTextItemSchema>[]): FlattenedContent {
  let text = "";
  const attachments: Attachment[] = [];
  for (const item of items) {
    const code = item.downloadCode ?? item.pictureDownloadCode;
    if (item.type === "picture" && code !== undefined) {
      attachments.push({ kind: "image", id: code });
      if (text !== "" && !text.endsWith("\n")) text += "\n";
    } else if (item.text !== undefined) {
      text += item.text;
    }
  }
  return { text: text.trim(), attachments };
}

/** Reads the body of any robot message type we understand; unknown types give empty text (raw keeps all). */
export function flattenContent(payload: RobotPayload): FlattenedContent {
  if (payload.msgtype === "text") {
    const replyTo = payload.text?.repliedMsg?.msgId;
    return { text: (payload.text?.content ?? "").trim(), attachments: [], ...(replyTo ? { replyTo } : {}) };
  }
  if (payload.msgtype === "richText") {
    const content = richTextContentSchema.safeParse(payload.content);
    if (!content.success) return { text: "", attachments: [] };
    const replyTo = content.data.repliedMsg?.msgId;
    return { ...flattenRichText(content.data.richText), ...(replyTo ? { replyTo } : {}) };
  }
  const media = mediaContentSchema.safeParse(payload.content);
  const code = media.success ? (media.data.downloadCode ?? media.data.pictureDownloadCode) : undefined;
  const kinds: Readonly<Record<string, string>> = {
    picture: "image",
    file: "file",
    audio: "audio",
    video: "video",
  };
  const kind = kinds[payload.msgtype];
  if (kind === undefined || code === undefined || !media.success) return { text: "", attachments: [] };
  const { fileName: name, duration } = media.data;
  // DingTalk's audio messages are voice messages recorded in the app, and come with DingTalk's own speech
  // recognition: that is what the person said, so it is the message's text and voice works without a
  // transcription endpoint. Such a recording is kept as an audio file, not marked `voice`: the server would
  // transcribe it again (or tell the person it cannot). Without recognition it is a voice message to transcribe.
  const recognition = (media.data.recognition ?? "").trim();
  return {
    text: recognition,
    attachments: [
      {
        kind,
        id: code,
        ...(kind === "audio" && recognition === "" ? { voice: true } : {}),
        ...(name === undefined ? {} : { name }),
        ...(duration === undefined ? {} : { durationMs: duration }),
      },
    ],
  };
}

/** The sender's stable id: the staff id (userid) when DingTalk gives one, else the encrypted sender id. */
export function senderIdOf(payload: RobotPayload): string {
  return payload.senderStaffId || payload.senderId;
}

/** Context of {@link toInboundMessage}. */
export interface InboundContext {
  readonly account: string;
  readonly streamMessageId: string;
  readonly receivedAt: number;
}

/**
 * Normalizes a robot message. One-on-one chats (`conversationType "1"`) get the session key
 * `dingtalk:{account}:dm:{staff id}`, groups (`"2"`) `dingtalk:{account}:group:{conversationId}`;
 * `conversation.id` is always DingTalk's conversationId. `mentioned` is DingTalk's `isInAtList`, or true in a one-on-one chat when absent;
 * no policy is applied here (the server's gate does that for every channel alike).
 */
export function toInboundMessage(payload: RobotPayload, context: InboundContext): InboundMessage {
  const isGroup = payload.conversationType === "2";
  const senderId = senderIdOf(payload);
  const kind = isGroup ? "group" : "dm";
  // DMs are keyed by the person (one session per user), groups by the conversation.
  const sessionId = isGroup ? payload.conversationId : senderId;
  const content = flattenContent(payload);
  const raw: DingTalkInboundRaw = { streamMessageId: context.streamMessageId, payload };
  return {
    sessionKey: formatSessionKey({
      channel: DINGTALK_CHANNEL,
      account: context.account,
      kind,
      id: sessionId,
    }),
    channel: DINGTALK_CHANNEL,
    id: payload.msgId,
    account: context.account,
    conversation: {
      kind,
      id: payload.conversationId,
      ...(isGroup && payload.conversationTitle ? { name: payload.conversationTitle } : {}),
    },
    sender: { id: senderId, ...(payload.senderNick ? { name: payload.senderNick } : {}) },
    mentioned: payload.isInAtList ?? !isGroup,
    text: content.text,
    ...(content.attachments.length > 0 ? { attachments: content.attachments } : {}),
    ...(content.replyTo === undefined ? {} : { replyTo: content.replyTo }),
    receivedAt: context.receivedAt,
    raw,
  };
}
