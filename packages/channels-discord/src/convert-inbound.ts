import {
  type Conversation,
  formatSessionKey,
  type InboundAttachment,
  type InboundMessage,
} from "@almanac/core";
import { BUTTON_CUSTOM_ID_PREFIX, type DiscordButtonPress } from "./discord-interaction-schema.js";
import {
  CONVERSATIONAL_MESSAGE_TYPES,
  type DiscordMessagePayload,
  messageCreateSchema,
  VOICE_MESSAGE_FLAG,
} from "./discord-message-schema.js";
import type { DiscordLocation } from "./types.js";

/** What the adapter knows besides the payload when it normalizes a message. */
export interface InboundContext {
  readonly account: string;
  /** The bot's own user id (from READY). */
  readonly botUserId: string;
  /** The bot's managed role(s) in the message's guild: `<@&role>` of these counts as a mention. */
  readonly botRoleIds: ReadonlySet<string>;
  readonly location: DiscordLocation;
  readonly receivedAt: number;
}

/** The outcome of validating an untrusted MESSAGE_CREATE payload. */
export type ParsedMessageCreate =
  | { readonly ok: true; readonly message: DiscordMessagePayload }
  | { readonly ok: false; readonly error: string };

/** Validates a gateway MESSAGE_CREATE payload (`d`), received as `unknown`. */
export function parseMessageCreate(data: unknown): ParsedMessageCreate {
  const parsed = messageCreateSchema.safeParse(data);
  return parsed.success ? { ok: true, message: parsed.data } : { ok: false, error: parsed.error.message };
}

/**
 * True for messages the adapter drops before the server's gate sees them: the bot's own posts (Discord
 * echoes them), other bots and webhooks (avoids bot loops), and system messages (joins, pins, thread starts).
 */
export function isNoise(message: DiscordMessagePayload, botUserId: string): boolean {
  return (
    message.author.id === botUserId ||
    message.author.bot === true ||
    message.author.system === true ||
    message.webhook_id !== undefined ||
    !CONVERSATIONAL_MESSAGE_TYPES.has(message.type)
  );
}

/**
 * Normalizes a validated MESSAGE_CREATE into an {@link InboundMessage}, or `undefined` for noise and
 * for empty messages that do not address the bot (stickers, polls). Mention gating and allowlists are not applied here:
 * `mentioned` and `conversation.kind` are set for the server's gate to decide.
 */
export function toInboundMessage(
  message: DiscordMessagePayload,
  raw: unknown,
  context: InboundContext,
): InboundMessage | undefined {
  if (isNoise(message, context.botUserId)) return undefined;
  const text = flattenText(message, context);
  const attachments = toInboundAttachments(message);
  const isReply = message.message_reference !== undefined && (message.message_reference.type ?? 0) === 0;
  const addressed = mentionsBot(message, context, isReply);
  // A bare "@bot" is a call for attention; an empty message nobody addressed (a sticker, a poll) is not.
  if (text === "" && attachments.length === 0 && !addressed) return undefined;
  const { sessionKey, conversation } = placeOf(
    { channelId: message.channel_id, authorId: message.author.id },
    context.account,
    context.location,
  );
  const replyTo = isReply ? message.message_reference?.message_id : undefined;
  return {
    sessionKey,
    channel: "discord",
    id: message.id,
    account: context.account,
    conversation,
    sender: { id: message.author.id, name: displayName(message.author, message.member) },
    mentioned: context.location.kind === "dm" || addressed,
    text,
    ...(attachments.length === 0 ? {} : { attachments }),
    ...(replyTo === undefined ? {} : { replyTo }),
    receivedAt: context.receivedAt,
    raw,
  };
}

/**
 * Normalizes a press of one of the adapter's buttons into an ordinary {@link InboundMessage}: from the person who
 * pressed, in the conversation of the message the button is on, with the button's reply as its text. It then
 * passes the server's gate and checks exactly as if that person had typed the reply there. `id` is the
 * interaction's (Discord redelivers it under the same id); `replyTo` is the message the button was on.
 */
export function toInboundPress(
  press: DiscordButtonPress,
  raw: unknown,
  context: Pick<InboundContext, "account" | "location" | "receivedAt">,
): InboundMessage {
  const { sessionKey, conversation } = placeOf(
    { channelId: press.channelId, authorId: press.presser.id },
    context.account,
    context.location,
  );
  return {
    sessionKey,
    channel: "discord",
    id: press.id,
    account: context.account,
    conversation,
    sender: { id: press.presser.id, name: displayName(press.presser, press.member) },
    // Pressing the bot's own button addresses the bot, like replying to its message does.
    mentioned: true,
    text: press.customId.slice(BUTTON_CUSTOM_ID_PREFIX.length),
    replyTo: press.messageId,
    receivedAt: context.receivedAt,
    raw,
  };
}

/**
 * The session key and conversation of something said (or pressed) by `authorId` in `channelId`: one rule for
 * messages and button presses, so a press lands in the same session as typing in that conversation would.
 */
function placeOf(
  where: { readonly channelId: string; readonly authorId: string },
  account: string,
  location: DiscordLocation,
): { sessionKey: string; conversation: Conversation } {
  const { channelId, authorId } = where;
  const named = (name: string | undefined) => (name === undefined ? {} : { name });
  switch (location.kind) {
    case "dm":
      return {
        // One DM session per user; the DM channel id is where replies go.
        sessionKey: formatSessionKey({ channel: "discord", account, kind: "dm", id: authorId }),
        conversation: { kind: "dm", id: channelId },
      };
    case "group":
      return {
        sessionKey: formatSessionKey({ channel: "discord", account, kind: "group", id: channelId }),
        conversation: { kind: "group", id: channelId, ...named(location.name) },
      };
    case "thread":
      return {
        sessionKey: formatSessionKey({
          channel: "discord",
          account,
          kind: "group",
          id: location.parentId,
          thread: channelId,
        }),
        conversation: { kind: "thread", id: channelId, parentId: location.parentId, ...named(location.name) },
      };
  }
}

/** A user or nickname mention of the bot, a mention of its managed role, or a reply to one of its posts. */
function mentionsBot(message: DiscordMessagePayload, context: InboundContext, isReply: boolean): boolean {
  const { botUserId, botRoleIds } = context;
  return (
    message.mentions.some((user) => user.id === botUserId) ||
    message.mention_roles.some((role) => botRoleIds.has(role)) ||
    (isReply && message.referenced_message?.author.id === botUserId) ||
    message.content.includes(`<@${botUserId}>`) ||
    message.content.includes(`<@!${botUserId}>`)
  );
}

/** Content with the bot's mentions removed and other users' `<@id>` written as `@name`. */
function flattenText(message: DiscordMessagePayload, context: InboundContext): string {
  const names = new Map(message.mentions.map((user) => [user.id, displayName(user, user.member)]));
  return message.content
    .replace(/[ \t]*<@(!?|&)(\d+)>[ \t]*/g, (whole, sigil: string, id: string) => {
      const isBot = sigil === "&" ? context.botRoleIds.has(id) : id === context.botUserId;
      if (isBot) return " ";
      const name = sigil === "&" ? undefined : names.get(id);
      return name === undefined ? whole : whole.replace(/<@!?\d+>/, `@${name}`);
    })
    .trim();
}

function displayName(
  user: DiscordMessagePayload["author"],
  member: DiscordMessagePayload["member"] | undefined,
): string {
  return member?.nick ?? user.global_name ?? user.username;
}

const IMAGE_EXTENSION = /\.(png|jpe?g|gif|webp)$/i;

/**
 * Every attachment of the message, by reference, for the server to download before the turn (the adapter's
 * `downloadAttachment`): images too, as kind `image`, so they are fetched and checked like any file rather than
 * passed on as CDN links that expire. A voice message (flag IS_VOICE_MESSAGE) is one `audio` attachment with
 * `voice` and its length.
 */
function toInboundAttachments(message: DiscordMessagePayload): InboundAttachment[] {
  const voice = ((message.flags ?? 0) & VOICE_MESSAGE_FLAG) !== 0;
  return message.attachments.map((attachment): InboundAttachment => {
    const type = attachment.content_type?.split(";")[0]?.trim().toLowerCase();
    const family = type === undefined ? undefined : type.split("/")[0];
    const isImage = type === undefined ? IMAGE_EXTENSION.test(attachment.filename) : family === "image";
    const kind = voice
      ? "audio"
      : isImage
        ? "image"
        : family === "audio" || family === "video"
          ? family
          : "file";
    return {
      kind,
      ...(voice ? { voice: true } : {}),
      name: attachment.filename,
      url: attachment.url,
      id: attachment.id,
      ...(type === undefined ? {} : { contentType: type }),
      ...(attachment.size === undefined ? {} : { size: attachment.size }),
      ...(attachment.duration_secs === undefined
        ? {}
        : { durationMs: Math.round(attachment.duration_secs * 1000) }),
    };
  });
}
