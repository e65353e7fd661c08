import { type OutboundMessage, parseSessionKey, splitMessage } from "@almanac/core";
import { z } from "zod";
import { DINGTALK_CHANNEL } from "./convert-inbound.js";
import { toDingTalkMarkdown } from "./convert-outbound-markdown.js";
import { DingTalkError } from "./errors.js";
import { robotPayloadSchema } from "./robot-payload.js";
import type { DeliveryPlan, MarkdownMessage } from "./types.js";

/**
 * Longest markdown `text` we send in one message, in characters. DingTalk documents no limit for robot
 * markdown text; 5,000 is our working limit. Its documented limit is 15,000 bytes for the OpenAPI's whole
 * `msgParam`, so a chunk is also kept under {@link MAX_TEXT_JSON_BYTES} (CJK text is 3 bytes a character).
 */
export const DINGTALK_MARKDOWN_LIMIT = 5_000;

/** Budget of a chunk's JSON-escaped text in UTF-8 bytes: 15,000 minus room for the title and the JSON around. */
export const MAX_TEXT_JSON_BYTES = 14_000;

/** Longest title: DingTalk shows it in the chat list and notifications, so it stays short. */
export const MAX_TITLE_LENGTH = 32;

const jsonBytes = (text: string): number => Buffer.byteLength(JSON.stringify(text), "utf8");

/**
 * Splits Markdown into DingTalk markdown messages within {@link DINGTALK_MARKDOWN_LIMIT} characters and
 * {@link MAX_TEXT_JSON_BYTES} bytes, each with a title, after rewriting it into the Markdown subset DingTalk
 * renders (code blocks as quoted lines, tables as lists: see `toDingTalkMarkdown`).
 */
export function toMarkdownMessages(markdown: string, limit = DINGTALK_MARKDOWN_LIMIT): MarkdownMessage[] {
  const chunks: string[] = [];
  const add = (chunk: string, chunkLimit: number): void => {
    const bytes = jsonBytes(chunk);
    if (bytes <= MAX_TEXT_JSON_BYTES || chunkLimit <= 64) {
      chunks.push(chunk);
      return;
    }
    const smaller = Math.max(64, Math.floor((chunk.length * MAX_TEXT_JSON_BYTES) / bytes) - 16);
    for (const piece of splitMessage(chunk, smaller)) add(piece, smaller);
  };
  for (const chunk of splitMessage(toDingTalkMarkdown(markdown), limit)) add(chunk, limit);
  return chunks.map((text) => ({ title: markdownTitle(text), text }));
}

const FENCE = /^\s*(`{3,}|~{3,})/;

/** A short plain title from the first line of prose (Markdown markers removed); `Reply` when there is none. */
export function markdownTitle(markdown: string): string {
  for (const line of markdown.split("\n")) {
    if (FENCE.test(line)) continue;
    const plain = line
      .replace(/^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d+[.)]\s+)*/, "")
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/[*_`~]/g, "")
      .replace(/\s+/g, " ")
      .trim();
    if (plain === "") continue;
    const characters = Array.from(plain);
    return characters.length <= MAX_TITLE_LENGTH
      ? plain
      : `${characters.slice(0, MAX_TITLE_LENGTH - 1).join("")}…`;
  }
  return "Reply";
}

const inboundRawSchema = z.object({ streamMessageId: z.string(), payload: robotPayloadSchema });

/**
 * Decides where a reply goes. With `inReplyTo` from this adapter: its conversation and its sessionWebhook.
 * Without (a proactive message): the conversation named by the session key, OpenAPI only.
 * @throws DingTalkError `dingtalk.target_invalid` when the session key is not this adapter's.
 */
export function toDeliveryPlan(message: OutboundMessage, account: string): DeliveryPlan {
  const raw = inboundRawSchema.safeParse(message.inReplyTo?.raw);
  if (message.inReplyTo?.channel === DINGTALK_CHANNEL && raw.success) {
    const { payload } = raw.data;
    const target: DeliveryPlan["target"] =
      payload.conversationType === "2"
        ? { kind: "group", openConversationId: payload.conversationId }
        : { kind: "dm", staffId: payload.senderStaffId || undefined };
    const { sessionWebhook, sessionWebhookExpiredTime } = payload;
    return sessionWebhook !== undefined && sessionWebhookExpiredTime !== undefined
      ? { target, webhook: { url: sessionWebhook, expiresAt: sessionWebhookExpiredTime } }
      : { target };
  }
  return { target: targetFromSessionKey(message.sessionKey, account) };
}

function targetFromSessionKey(sessionKey: string, account: string): DeliveryPlan["target"] {
  let parts: ReturnType<typeof parseSessionKey>;
  try {
    parts = parseSessionKey(sessionKey);
  } catch (error) {
    throw new DingTalkError("dingtalk.target_invalid", `Cannot send to ${JSON.stringify(sessionKey)}.`, {
      cause: error,
    });
  }
  if (parts.channel !== DINGTALK_CHANNEL || parts.account !== account) {
    throw new DingTalkError(
      "dingtalk.target_invalid",
      `Session ${JSON.stringify(sessionKey)} does not belong to DingTalk account "${account}".`,
    );
  }
  if (parts.kind === "group") return { kind: "group", openConversationId: parts.id };
  if (parts.kind === "dm") {
    // Encrypted sender ids ("$:LWCP_v1:$…") are not staff ids: the OpenAPI cannot reach such a user.
    return { kind: "dm", staffId: parts.id.startsWith("$:") ? undefined : parts.id };
  }
  throw new DingTalkError(
    "dingtalk.target_invalid",
    `DingTalk has no conversations of kind "${parts.kind}".`,
  );
}
