import { z } from "zod";
import type { Logger } from "./logger.js";
import type { ImageBlock } from "./message.js";
import { setting } from "./settings.js";

/**
 * An attachment of an inbound message other than an image the model is shown (files, audio, video, and
 * images a channel only knows by reference), by reference only: `url` where the platform gives a link, `id`
 * where it gives a key to download with.
 */
export interface InboundAttachment {
  /** `image`, `file`, `audio`, `video`, `sticker`, …; `audio` with `voice` for a recorded voice message. */
  readonly kind: string;
  /** True for a voice message recorded in the chat app (as opposed to an audio file sent). */
  readonly voice?: boolean;
  readonly name?: string;
  readonly url?: string;
  readonly id?: string;
  /** MIME type, as the platform states it. */
  readonly contentType?: string;
  /** Bytes, as the platform states it. */
  readonly size?: number;
  /** Length of audio or video, in milliseconds, as the platform states it. */
  readonly durationMs?: number;
}

/** Who sent an inbound message. */
export interface Sender {
  readonly id: string;
  readonly name?: string;
}

/** Where a message was said: a direct chat, a group/channel, or a thread inside one. */
export interface Conversation {
  readonly kind: "dm" | "group" | "thread" | "api" | "web";
  /** The platform's chat/channel id (for a thread: the thread's own id when the platform has one). */
  readonly id: string;
  /** Parent group/channel of a thread. */
  readonly parentId?: string;
  readonly name?: string;
}

/**
 * One message arriving from any channel, normalized. Platform specifics stay on `raw`
 * and never leak into the rest of Almanac.
 */
export interface InboundMessage {
  /** Canonical session key `{channel}:{account}:{kind}:{id}[:{thread}]`. */
  readonly sessionKey: string;
  /** Channel name, e.g. `api`, `web`, `discord`, `feishu`, `dingtalk`. */
  readonly channel: string;
  /** The platform's id of this message or event (used for dedup). */
  readonly id: string;
  /** The bot account that received it (one platform may run several bots). */
  readonly account: string;
  readonly conversation: Conversation;
  readonly sender: Sender;
  /** True when the bot was @-mentioned (group mention gating); always true in DMs. */
  readonly mentioned: boolean;
  /** Plain text with bot mentions stripped and rich text flattened. */
  readonly text: string;
  readonly images?: readonly ImageBlock[];
  /** Id of the message this one replies to, when the platform says. */
  readonly replyTo?: string;
  /** Attachments other than the images above (files, audio…), by reference only. */
  readonly attachments?: readonly InboundAttachment[];
  /** Milliseconds since the Unix epoch. */
  readonly receivedAt: number;
  readonly raw?: unknown;
}

/** A reply going back out through a channel. */
export interface OutboundMessage {
  readonly sessionKey: string;
  /** Markdown text; the adapter converts it to what its platform renders. */
  readonly text: string;
  /** The inbound message this answers (adapters thread the reply to it). */
  readonly inReplyTo?: InboundMessage;
  /**
   * Buttons under the message, where the platform has them (`capabilities.buttons`); a text channel ignores them
   * (the text says what to type). Pressing one arrives as an ordinary inbound message from the person who
   * pressed it, whose text is the button's `reply`, so it passes the same gate and the same checks as typing it.
   */
  readonly buttons?: readonly MessageButton[];
  /**
   * The same key on a repeated send means the same message (a scheduled task's reply sent again after a crash):
   * an adapter whose platform deduplicates by such a key passes it on and says so with
   * {@link ChannelAdapter.idempotentSends}; others ignore it.
   */
  readonly idempotencyKey?: string;
}

/** A button under an outbound message (see {@link OutboundMessage.buttons}). */
export interface MessageButton {
  readonly label: string;
  /** The text the press stands for, e.g. `approve K7QD`: what a person would otherwise type. */
  readonly reply: string;
  readonly style?: "primary" | "danger" | "secondary";
}

/** The state a channel reports to the admin API. */
export interface ChannelStatus {
  readonly channel: string;
  readonly state: "disabled" | "connecting" | "ready" | "error";
  readonly detail?: string;
  readonly lastEventAt?: number;
}

/**
 * A chat platform connection. The adapter normalizes events and sends replies; dedup, allowlists and
 * mention gating are applied by the server's gate to every adapter alike.
 */
export interface ChannelAdapter {
  /** Channel name used in session keys, e.g. `discord`. */
  readonly name: string;
  /**
   * Connects and starts delivering inbound messages to `onMessage`. The adapter acknowledges the platform
   * itself, immediately; `onMessage` must return quickly (the server queues the turn).
   */
  start(onMessage: (message: InboundMessage) => void): Promise<void>;
  /** Sends a reply (split to the platform's limit, threaded to `inReplyTo` when given). */
  send(message: OutboundMessage): Promise<void>;
  /** True when sending the same `idempotencyKey` twice posts the message once (the platform deduplicates). */
  readonly idempotentSends?: boolean;
  /** How long after a send the platform still deduplicates a repeat of its key (unset: without limit). */
  readonly idempotencyWindowMs?: number;
  status(): ChannelStatus;
  stop(): Promise<void>;
}

/** An adapter that can show the platform's "typing…" indicator (or a reaction) while a turn runs. */
export interface TypingIndicatorAdapter extends ChannelAdapter {
  /** Starts the indicator for the conversation of `message`; returns a function that stops it. */
  startTyping(message: InboundMessage): Promise<() => Promise<void>>;
}

/** Type guard for {@link TypingIndicatorAdapter}. */
export function hasTypingIndicator(adapter: ChannelAdapter): adapter is TypingIndicatorAdapter {
  return typeof (adapter as Partial<TypingIndicatorAdapter>).startTyping === "function";
}

/** Limits of one attachment download. */
export interface DownloadLimits {
  /** Largest file read; a larger one fails with {@link AttachmentTooLargeError} (before or while reading). */
  readonly maxBytes: number;
  /** Cancels the download (the time limit, or the server stopping). */
  readonly signal: AbortSignal;
}

/** The bytes of a downloaded attachment, with what the platform said about them. */
export interface DownloadedAttachment {
  readonly bytes: Uint8Array;
  /** The MIME type the platform stated (the server checks the content itself). */
  readonly contentType?: string;
  readonly name?: string;
}

/** An attachment over the size limit: said to the person, the rest of the message goes on. */
export class AttachmentTooLargeError extends Error {
  readonly limitBytes: number;
  readonly sizeBytes: number | undefined;
  constructor(limitBytes: number, sizeBytes?: number) {
    super(
      `The file is larger than ${Math.round(limitBytes / 1_048_576)} MB${sizeBytes === undefined ? "" : ` (${(sizeBytes / 1_048_576).toFixed(1)} MB)`}.`,
    );
    this.name = "AttachmentTooLargeError";
    this.limitBytes = limitBytes;
    this.sizeBytes = sizeBytes;
  }
}

/**
 * An adapter that downloads what people send (images, files, voice): through the platform's resource API
 * (Feishu's message resources, DingTalk's download codes) or the attachment's URL (Discord's CDN), within the
 * limits. The server stores the bytes in the conversation's inbox before the turn.
 */
export interface AttachmentDownloadAdapter extends ChannelAdapter {
  downloadAttachment(
    message: InboundMessage,
    attachment: InboundAttachment,
    limits: DownloadLimits,
  ): Promise<DownloadedAttachment>;
}

/** Type guard for {@link AttachmentDownloadAdapter}. */
export function canDownloadAttachments(adapter: ChannelAdapter): adapter is AttachmentDownloadAdapter {
  return typeof (adapter as Partial<AttachmentDownloadAdapter>).downloadAttachment === "function";
}

/**
 * A reply shown as it is written (`capabilities.streamingEdits`): one message edited as text arrives, at most
 * once a second, continued in a new message at the platform's length limit. `finish` makes the shown text
 * exactly the final reply (no lost tail, no duplicate); an adapter that cannot edit any more falls back to
 * sending what is missing as plain messages.
 */
export interface ReplyStream {
  /** The whole reply so far (not a delta): the adapter shows it when its edit budget allows. */
  update(text: string): void;
  /** The final reply: shown exactly, waiting for any edit in flight. */
  finish(text: string): Promise<void>;
}

/** An adapter that streams replies by editing a message (Discord) or a card (Feishu, DingTalk). */
export interface StreamingReplyAdapter extends ChannelAdapter {
  startReplyStream(message: OutboundMessage): ReplyStream;
}

/** Type guard for {@link StreamingReplyAdapter}. */
export function canStreamReplies(adapter: ChannelAdapter): adapter is StreamingReplyAdapter {
  return typeof (adapter as Partial<StreamingReplyAdapter>).startReplyStream === "function";
}

/** A file the assistant sends to a conversation (`capabilities.uploads`). */
export interface OutboundFile {
  readonly sessionKey: string;
  readonly name: string;
  readonly bytes: Uint8Array;
  readonly contentType: string;
  /** Text shown with the file. */
  readonly caption?: string;
  readonly inReplyTo?: InboundMessage;
}

/** An adapter that uploads files and images to a conversation through the platform's upload API. */
export interface FileSendingAdapter extends ChannelAdapter {
  sendFile(file: OutboundFile): Promise<void>;
}

/** Type guard for {@link FileSendingAdapter}. */
export function canSendFiles(adapter: ChannelAdapter): adapter is FileSendingAdapter {
  return typeof (adapter as Partial<FileSendingAdapter>).sendFile === "function";
}

/** A platform request to an adapter's webhook, as the server received it. */
export interface WebhookRequest {
  /** Request headers with lower-case names (Node's `IncomingHttpHeaders` fits). */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The body exactly as received: platforms sign these bytes, so it is never re-serialized. */
  readonly rawBody: string | Uint8Array;
}

/** What the server answers the platform; `body` is sent as JSON. */
export interface WebhookResponse {
  readonly status: number;
  readonly body: unknown;
}

/**
 * An adapter the platform reaches over HTTP: the server exposes `POST /channels/{name}/webhook` for it,
 * public, because the adapter verifies the platform's signature itself.
 */
export interface WebhookAdapter extends ChannelAdapter {
  /** False when the adapter is configured to connect out instead (e.g. Feishu's long connection). */
  readonly receivesWebhooks: boolean;
  handleWebhook(request: WebhookRequest): Promise<WebhookResponse>;
}

/** Type guard for {@link WebhookAdapter}: true only when the adapter takes webhooks in its configuration. */
export function hasWebhook(adapter: ChannelAdapter): adapter is WebhookAdapter {
  const candidate = adapter as Partial<WebhookAdapter>;
  return typeof candidate.handleWebhook === "function" && candidate.receivesWebhooks === true;
}

/**
 * Who may talk to the bot on one channel, and which of its chats reach the owner's private memory: the keys every
 * channel's configuration block has. The server's gate applies the first six to every adapter alike; the memory
 * scope reads `allowFrom` and `trustedGroups` (a channel without them would give the owner's DMs a shared scope).
 */
export interface ChannelAccessSettings {
  readonly dmPolicy: "open" | "allowlist";
  readonly allowFrom: readonly string[];
  readonly groupPolicy: "open" | "allowlist" | "disabled";
  readonly groups: readonly string[];
  readonly requireMention: boolean;
  readonly noMentionGroups: readonly string[];
  readonly trustedGroups: readonly string[];
}

/** A fresh schema per use: the setting registry keys metadata by schema instance. */
const idList = () => z.array(z.string().min(1)).default([]);

/**
 * The access settings of one channel, documented with its environment variables (`<prefix>_DM_POLICY`, …): spread
 * into the channel's settings schema so its output has every {@link ChannelAccessSettings} key.
 * @param prefix environment-variable prefix, e.g. `ALMANAC_DISCORD`
 * @param label the platform's name in the descriptions, e.g. `Discord`
 */
export function channelAccessSettings(prefix: string, label: string) {
  return {
    dmPolicy: setting(z.enum(["open", "allowlist"]).default("allowlist"), {
      env: `${prefix}_DM_POLICY`,
      description: `Who may talk to the bot in ${label} direct messages: \`allowlist\` (only ${prefix}_ALLOW_FROM) or \`open\` (anyone).`,
    }),
    allowFrom: setting(idList(), {
      env: `${prefix}_ALLOW_FROM`,
      description: `${label} user ids allowed to talk to the bot (comma-separated). Applies to DMs and, when set, to groups too.`,
      example: "1234567890,2345678901",
    }),
    groupPolicy: setting(z.enum(["open", "allowlist", "disabled"]).default("allowlist"), {
      env: `${prefix}_GROUP_POLICY`,
      description: `Which ${label} groups/channels the bot answers in: \`allowlist\` (only ${prefix}_GROUPS), \`open\` (all) or \`disabled\`.`,
    }),
    groups: setting(idList(), {
      env: `${prefix}_GROUPS`,
      description: `${label} group/channel ids the bot answers in (comma-separated).`,
      example: "987654321,876543210",
    }),
    requireMention: setting(z.boolean().default(true), {
      env: `${prefix}_REQUIRE_MENTION`,
      description: `In ${label} groups, answer only when the bot is @-mentioned.`,
    }),
    noMentionGroups: setting(idList(), {
      env: `${prefix}_NO_MENTION_GROUPS`,
      description: `${label} group ids where the bot answers without being mentioned (overrides ${prefix}_REQUIRE_MENTION).`,
      example: "987654321,876543210",
    }),
    trustedGroups: setting(idList(), {
      env: `${prefix}_TRUSTED_GROUPS`,
      description: `${label} group ids trusted with the owner's private memory (MEMORY.md, daily logs, file tools), like a DM from ${prefix}_ALLOW_FROM. Other groups get only their own log (docs/memory-files.md).`,
      example: "987654321,876543210",
    }),
  };
}

/** The schema of a channel's configuration block: whatever else it holds, its output has the access settings. */
export type ChannelSettingsSchema = z.ZodType<ChannelAccessSettings>;

/** What a channel can do beyond receiving and answering text; false where the adapter does not do it (yet). */
export interface ChannelCapabilities {
  /** Edits its reply in place while the model writes it. */
  readonly streamingEdits: boolean;
  /** Shows buttons a person can press (e.g. to approve a tool call). */
  readonly buttons: boolean;
  /** Sends files to the conversation. */
  readonly uploads: boolean;
}

/** One line of `almanac doctor` about a channel: how its configuration looks, and how to fix it. */
export interface ChannelCheck {
  readonly status: "ok" | "warn" | "fail";
  /** Names settings and their environment variables; never a secret's value. */
  readonly message: string;
  readonly hint?: string;
}

/** What the server hands a channel's factory besides its settings. */
export interface ChannelAdapterOptions {
  readonly logger: Logger;
}

/**
 * Everything the server knows of one chat platform, so adding a platform is one package and one line in the
 * server's channel list: its configuration block (the schema, with env metadata through `setting`), when it is
 * on, how to build its adapter, what `almanac doctor` says about it, and what it can do. A descriptor's module
 * must not load the platform's SDK: the configuration loader (and every CLI command) imports it.
 * The functions are declared as methods, not function-typed properties, so that descriptors of different settings
 * fit one `ChannelDescriptor` list; the server passes each one only the block its own schema produced.
 * @typeParam Schema its settings schema; a schema without the {@link ChannelAccessSettings} keys does not compile
 * @typeParam Enabled the settings once {@link ChannelDescriptor.enabled} said yes (credentials present)
 */
export interface ChannelDescriptor<
  Name extends string = string,
  Schema extends ChannelSettingsSchema = ChannelSettingsSchema,
  Enabled extends z.output<Schema> = z.output<Schema>,
> {
  /** Channel name: its key under `channels` in the configuration and the first part of its session keys. */
  readonly name: Name;
  /** The platform's name for people (docs, doctor). */
  readonly label: string;
  /** One sentence saying which settings switch the channel on (`.env.example`). */
  readonly enabledBy: string;
  /** The `channels.<name>` block of the configuration, defaults applied; takes `undefined` (`.prefault({})`). */
  readonly settings: Schema;
  /** True when the settings are complete enough to connect (credentials present). */
  enabled(settings: z.output<Schema>): settings is Enabled;
  /** Builds the adapter (not connected yet); the platform's SDK is loaded only now. */
  createAdapter(settings: Enabled, options: ChannelAdapterOptions): Promise<ChannelAdapter>;
  /** What `almanac doctor` reports; undefined when nothing of the channel is configured. */
  check(settings: z.output<Schema>): ChannelCheck | undefined;
  readonly capabilities: ChannelCapabilities;
}
