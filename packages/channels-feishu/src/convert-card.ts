import type { InboundMessage, MessageButton } from "@almanac/core";
import { z } from "zod";
import { FEISHU_CHANNEL, placeOf } from "./convert-inbound.js";
import {
  FEISHU_POST_BODY_LIMIT_BYTES,
  splitMarkdownToFit,
  toPostContent,
  withoutMentionTags,
} from "./convert-outbound.js";
import type { FeishuCardActionEvent } from "./event-schema.js";
import type { FeishuCardActionRaw } from "./types.js";

/**
 * Where a card goes: what a press on it needs to be keyed exactly like a message typed in that chat. The callback
 * names the chat but not its type or topic, so the card carries them in every button's value (set by the bot,
 * echoed by Feishu): this survives restarts and needs no extra scope to look the chat up.
 */
export interface CardPlace {
  readonly chatType: "p2p" | "group";
  /** The chat the card goes to, when known before sending: a press arriving from another chat is refused. */
  readonly chatId?: string | undefined;
  /** The topic (`omt_…`) the card goes into. */
  readonly threadId?: string | undefined;
}

/** Feishu's button types for Almanac's button styles. */
const BUTTON_TYPES = { primary: "primary", danger: "danger", secondary: "default" } as const;

/** What every button of an Almanac card carries in its `value`. */
const buttonValueSchema = z.object({
  almanac_reply: z.string().min(1),
  almanac_chat_type: z.enum(["p2p", "group"]),
  almanac_chat_id: z.string().min(1).optional(),
  almanac_thread_id: z.string().min(1).optional(),
});

/** A place as long as any real one, to size cards before the real place is known. */
export const LONGEST_PLACE: CardPlace = {
  chatType: "group",
  chatId: `oc_${"0".repeat(64)}`,
  threadId: `omt_${"0".repeat(64)}`,
};

/**
 * A card (Feishu card JSON 1.0) showing `markdown` with `buttons` under it, or `note` instead when the buttons
 * are gone. `update_multi` makes an update (the card without buttons) visible to everyone, not only the presser.
 */
export function buildCard(
  markdown: string,
  buttons: readonly MessageButton[],
  place: CardPlace,
  note?: string,
): Record<string, unknown> {
  const elements: Record<string, unknown>[] = [{ tag: "markdown", content: withoutMentionTags(markdown) }];
  if (buttons.length > 0) {
    elements.push({
      tag: "action",
      actions: buttons.map((button) => ({
        tag: "button",
        text: { tag: "plain_text", content: button.label },
        type: BUTTON_TYPES[button.style ?? "secondary"],
        value: {
          almanac_reply: button.reply,
          almanac_chat_type: place.chatType,
          ...(place.chatId === undefined ? {} : { almanac_chat_id: place.chatId }),
          ...(place.threadId === undefined ? {} : { almanac_thread_id: place.threadId }),
        },
      })),
    });
  }
  if (note !== undefined) elements.push({ tag: "note", elements: [{ tag: "plain_text", content: note }] });
  return { config: { update_multi: true }, elements };
}

/** `content` of an interactive message. */
export function toCardContent(markdown: string, buttons: readonly MessageButton[], place: CardPlace): string {
  return JSON.stringify(buildCard(markdown, buttons, place));
}

/**
 * Splits a message with buttons so every request fits Feishu's 30 KB: the last piece becomes the card with the
 * buttons, any earlier pieces go first as ordinary posts (a card is sized for the longest place it could go to).
 */
export function markdownToCardMessage(
  markdown: string,
  buttons: readonly MessageButton[],
  maxBodyBytes = FEISHU_POST_BODY_LIMIT_BYTES,
): { readonly posts: readonly string[]; readonly cardMarkdown: string } {
  const chunks = splitMarkdownToFit(
    markdown,
    (chunk) => toCardContent(chunk, buttons, LONGEST_PLACE),
    maxBodyBytes,
  );
  const cardMarkdown = chunks.pop() ?? "";
  return { posts: chunks.map(toPostContent), cardMarkdown };
}

/** What {@link toCardPress} needs besides the event. */
export interface CardPressContext {
  readonly account: string;
  readonly receivedAt: number;
}

/** A press read: an inbound message, a press to refuse (with the reason shown to the presser), or not ours. */
export type CardPress =
  | { readonly kind: "message"; readonly message: InboundMessage; readonly place: CardPlace }
  | { readonly kind: "refused"; readonly reason: string }
  | { readonly kind: "ignored" };

/**
 * Turns a press on an Almanac card into the message the person would otherwise have typed: same session key
 * (see `placeOf`), sender = who pressed, text = the button's reply, `mentioned` (pressing a bot's button
 * addresses the bot). Its id is the event id (or the action token), unique per press; `replyTo` is the card.
 */
export function toCardPress(event: FeishuCardActionEvent, context: CardPressContext): CardPress {
  const value = buttonValueSchema.safeParse(event.action.value);
  if (!value.success) return { kind: "ignored" };
  const { open_chat_id: chatId, open_message_id: cardMessageId } = event.context;
  const senderId = event.operator.open_id ?? event.operator.user_id ?? event.operator.union_id;
  const id = event.event_id ?? event.token;
  if (senderId === undefined || id === undefined) return { kind: "ignored" };
  const {
    almanac_reply: text,
    almanac_chat_type: chatType,
    almanac_chat_id: cardChatId,
    almanac_thread_id: threadId,
  } = value.data;
  if (cardChatId !== undefined && cardChatId !== chatId) {
    // A forwarded card: its buttons say nothing true about the chat it is in now.
    return {
      kind: "refused",
      reason: "This button works only in the chat it was sent to. Nothing was sent.",
    };
  }
  const { sessionKey, conversation } = placeOf({ chatType, chatId, threadId }, senderId, context.account);
  const raw: FeishuCardActionRaw = {
    kind: "card_action",
    ...(event.event_id === undefined ? {} : { eventId: event.event_id }),
    ...(event.tenant_key === undefined ? {} : { tenantKey: event.tenant_key }),
    ...(event.app_id === undefined ? {} : { appId: event.app_id }),
    cardMessageId,
    chatType,
    ...(threadId === undefined ? {} : { threadId }),
    event,
  };
  const message: InboundMessage = {
    sessionKey,
    channel: FEISHU_CHANNEL,
    id,
    account: context.account,
    conversation,
    sender: { id: senderId },
    mentioned: true,
    text,
    replyTo: cardMessageId,
    receivedAt: context.receivedAt,
    raw,
  };
  return { kind: "message", message, place: { chatType, chatId, threadId } };
}

const cardActionRawSchema = z.object({ kind: z.literal("card_action"), cardMessageId: z.string() });

/** The card a pressed button was on, for a message that came from a press; undefined for typed messages. */
export function cardMessageOf(message: InboundMessage): string | undefined {
  const parsed = cardActionRawSchema.safeParse(message.raw);
  return parsed.success ? parsed.data.cardMessageId : undefined;
}

/** The answer to a `card.action.trigger` callback: a toast for the presser and, optionally, the card replaced. */
export interface CardActionAnswer {
  readonly toast: { readonly type: "info" | "success" | "error" | "warning"; readonly content: string };
  readonly card?: { readonly type: "raw"; readonly data: Record<string, unknown> };
}
