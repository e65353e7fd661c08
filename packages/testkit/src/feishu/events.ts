import { randomBytes, randomUUID } from "node:crypto";

/** A Feishu user (or bot) as events identify it. */
export interface FakeFeishuUser {
  readonly openId: string;
  readonly name?: string;
  readonly userId?: string;
  readonly unionId?: string;
}

/** A mention in a message: `key` is the placeholder (`@_user_N`) the text or post uses. */
export interface FakeFeishuMention extends FakeFeishuUser {
  readonly key: string;
}

/** One element of a rich-text (post) paragraph, as Feishu delivers it in `im.message.receive_v1`. */
export type FakePostElement =
  | { readonly tag: "text"; readonly text: string; readonly style?: readonly string[] }
  | { readonly tag: "a"; readonly text: string; readonly href: string }
  | { readonly tag: "at"; readonly user_id: string; readonly user_name?: string }
  | { readonly tag: "img"; readonly image_key: string }
  | { readonly tag: "media"; readonly file_key: string; readonly image_key?: string }
  | { readonly tag: "emotion"; readonly emoji_type: string }
  | { readonly tag: "code_block"; readonly language?: string; readonly text: string }
  | { readonly tag: "hr" };

/** What a test says about an incoming user message; everything else gets realistic defaults. */
export interface FakeMessageSpec {
  readonly chatType: "p2p" | "group";
  /** Default: `oc_p2p_<sender open_id>` for p2p, `oc_group_1` for groups. */
  readonly chatId?: string;
  /** Default: `{ openId: "ou_user_1" }`. */
  readonly sender?: FakeFeishuUser;
  /** Default: a fresh `om_…` id. Reuse one to simulate a redelivery of the same message. */
  readonly messageId?: string;
  /** Default: a fresh id. */
  readonly eventId?: string;
  /** A text message; `@_user_N` placeholders refer to `mentions`. */
  readonly text?: string;
  /** A rich-text message (paragraphs of elements). */
  readonly post?: { readonly title?: string; readonly content: readonly (readonly FakePostElement[])[] };
  /** An image message. */
  readonly image?: { readonly imageKey: string };
  /** A file message (`message_type: "file"`). */
  readonly file?: { readonly fileKey: string; readonly fileName: string };
  /** A voice message recorded in the app (`message_type: "audio"`); `durationMs` is its length. */
  readonly audio?: { readonly fileKey: string; readonly durationMs: number };
  /** A video (`message_type: "media"`): the file, its cover image, name and length. */
  readonly media?: {
    readonly fileKey: string;
    readonly imageKey: string;
    readonly fileName: string;
    readonly durationMs: number;
  };
  /**
   * Mentions the bot as `@_user_1`: a text gets `"@_user_1 "` in front, a post an `at` element first.
   * Other mentions in `mentions` should then use `@_user_2` and up.
   */
  readonly mentionBot?: boolean;
  /** Other mentioned users; the text or post must contain their keys itself. */
  readonly mentions?: readonly FakeFeishuMention[];
  readonly rootId?: string;
  readonly parentId?: string;
  readonly threadId?: string;
  /** Milliseconds since the epoch; default now. */
  readonly createTime?: number;
}

/** Identity of the fake app and bot, needed to build events. */
export interface FakeEventContext {
  readonly appId: string;
  readonly botOpenId: string;
  readonly botName: string;
  readonly tenantKey: string;
}

/** A built `im.message.receive_v1` event (schema 2.0) plus the ids a test asserts on. */
export interface BuiltMessageEvent {
  readonly eventId: string;
  readonly messageId: string;
  readonly chatId: string;
  /** The JSON envelope exactly as Feishu sends it (long connection payload or webhook body before encryption). */
  readonly envelope: Record<string, unknown>;
}

const DEFAULT_SENDER: FakeFeishuUser = { openId: "ou_user_1", name: "User One" };
const BOT_KEY = "@_user_1";

/** Builds an `im.message.receive_v1` event the way the Feishu open platform delivers it. */
export function buildMessageEvent(spec: FakeMessageSpec, context: FakeEventContext): BuiltMessageEvent {
  const sender = spec.sender ?? DEFAULT_SENDER;
  const chatId = spec.chatId ?? (spec.chatType === "p2p" ? `oc_p2p_${sender.openId}` : "oc_group_1");
  const messageId = spec.messageId ?? `om_${randomBytes(12).toString("hex")}`;
  const eventId = spec.eventId ?? randomBytes(16).toString("hex");
  const created = String(spec.createTime ?? Date.now());
  const botMention: FakeFeishuMention = { key: BOT_KEY, openId: context.botOpenId, name: context.botName };
  const mentions = [...(spec.mentionBot ? [botMention] : []), ...(spec.mentions ?? [])];
  const { messageType, content } = buildContent(spec, botMention);
  const message: Record<string, unknown> = {
    message_id: messageId,
    ...(spec.rootId === undefined ? {} : { root_id: spec.rootId }),
    ...(spec.parentId === undefined ? {} : { parent_id: spec.parentId }),
    ...(spec.threadId === undefined ? {} : { thread_id: spec.threadId }),
    create_time: created,
    update_time: created,
    chat_id: chatId,
    chat_type: spec.chatType,
    message_type: messageType,
    content: JSON.stringify(content),
    ...(mentions.length === 0
      ? {}
      : { mentions: mentions.map((mention) => wireMention(mention, context.tenantKey)) }),
    user_agent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) Lark/7.30.0",
  };
  const envelope = {
    schema: "2.0",
    header: {
      event_id: eventId,
      event_type: "im.message.receive_v1",
      create_time: created,
      token: "",
      app_id: context.appId,
      tenant_key: context.tenantKey,
    },
    event: {
      sender: {
        sender_id: {
          union_id: sender.unionId ?? `on_${sender.openId.replace(/^ou_/, "")}`,
          user_id: sender.userId ?? sender.openId.replace(/^ou_/, "u_"),
          open_id: sender.openId,
        },
        sender_type: "user",
        tenant_key: context.tenantKey,
      },
      message,
    },
  };
  return { eventId, messageId, chatId, envelope };
}

/** Builds the `url_verification` request Feishu sends when a request URL is saved in the console. */
export function buildUrlVerification(challenge: string = randomUUID()): Record<string, unknown> {
  return { challenge, token: "", type: "url_verification" };
}

function buildContent(
  spec: FakeMessageSpec,
  botMention: FakeFeishuMention,
): { messageType: string; content: unknown } {
  const given = [spec.text, spec.post, spec.image, spec.file, spec.audio, spec.media].filter(
    (value) => value !== undefined,
  ).length;
  if (given !== 1)
    throw new Error("FakeMessageSpec: give exactly one of text, post, image, file, audio or media");
  if (spec.text !== undefined) {
    return {
      messageType: "text",
      content: { text: spec.mentionBot ? `${BOT_KEY} ${spec.text}` : spec.text },
    };
  }
  if (spec.post !== undefined) {
    const atBot: FakePostElement = { tag: "at", user_id: BOT_KEY, user_name: botMention.name ?? "bot" };
    const [first = [], ...rest] = spec.post.content;
    const paragraphs = spec.mentionBot ? [[atBot, ...first], ...rest] : [first, ...rest];
    return { messageType: "post", content: { title: spec.post.title ?? "", content: paragraphs } };
  }
  if (spec.file !== undefined)
    return { messageType: "file", content: { file_key: spec.file.fileKey, file_name: spec.file.fileName } };
  if (spec.audio !== undefined)
    return {
      messageType: "audio",
      content: { file_key: spec.audio.fileKey, duration: spec.audio.durationMs },
    };
  if (spec.media !== undefined)
    return {
      messageType: "media",
      content: {
        file_key: spec.media.fileKey,
        image_key: spec.media.imageKey,
        file_name: spec.media.fileName,
        duration: spec.media.durationMs,
      },
    };
  return { messageType: "image", content: { image_key: spec.image?.imageKey } };
}

function wireMention(mention: FakeFeishuMention, tenantKey: string): Record<string, unknown> {
  return {
    key: mention.key,
    id: {
      union_id: mention.unionId ?? `on_${mention.openId.replace(/^ou_/, "")}`,
      user_id: mention.userId ?? "",
      open_id: mention.openId,
    },
    name: mention.name ?? mention.openId,
    tenant_key: tenantKey,
  };
}

/** What a test says about a button press; the card, chat and button value come from what the bot sent. */
export interface FakeCardActionSpec {
  /** The card message (`om_…`) the button is on. */
  readonly messageId: string;
  /** The chat the card is in. */
  readonly chatId: string;
  /** The pressed button's `value`, exactly as the card defined it (Feishu echoes it). */
  readonly value: unknown;
  /** Who presses; default `{ openId: "ou_user_1" }`. */
  readonly operator?: FakeFeishuUser;
  /** Default: a fresh id. */
  readonly eventId?: string;
  /** The action token; default a fresh `c-…`. */
  readonly token?: string;
}

/** A built `card.action.trigger` callback (schema 2.0) plus the ids a test asserts on. */
export interface BuiltCardAction {
  readonly eventId: string;
  readonly token: string;
  readonly messageId: string;
  readonly chatId: string;
  readonly operatorOpenId: string;
  /** The JSON envelope exactly as Feishu sends it (long connection payload or webhook body before encryption). */
  readonly envelope: Record<string, unknown>;
}

/**
 * Builds the `card.action.trigger` callback Feishu sends when someone presses a button on a card (the new card
 * callback, 卡片回传交互): the operator, the action token, the button's value, and the card's message and chat.
 */
export function buildCardActionEvent(spec: FakeCardActionSpec, context: FakeEventContext): BuiltCardAction {
  const operator = spec.operator ?? DEFAULT_SENDER;
  const eventId = spec.eventId ?? randomBytes(16).toString("hex");
  const token = spec.token ?? `c-${randomBytes(20).toString("hex")}`;
  const envelope = {
    schema: "2.0",
    header: {
      event_id: eventId,
      token: "",
      // Microseconds, as Feishu writes it for callbacks.
      create_time: String(Date.now() * 1000),
      event_type: "card.action.trigger",
      tenant_key: context.tenantKey,
      app_id: context.appId,
    },
    event: {
      operator: {
        tenant_key: context.tenantKey,
        user_id: operator.userId ?? operator.openId.replace(/^ou_/, "u_"),
        open_id: operator.openId,
        union_id: operator.unionId ?? `on_${operator.openId.replace(/^ou_/, "")}`,
      },
      token,
      action: { value: spec.value, tag: "button", timezone: "Asia/Shanghai" },
      host: "im_message",
      context: { open_message_id: spec.messageId, open_chat_id: spec.chatId },
    },
  };
  return {
    eventId,
    token,
    messageId: spec.messageId,
    chatId: spec.chatId,
    operatorOpenId: operator.openId,
    envelope,
  };
}
