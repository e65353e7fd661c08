import type { ImageBlock } from "./message.js";

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
