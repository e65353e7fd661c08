import type { ImageBlock } from "./message.js";

/** Who sent an inbound message. */
export interface Sender {
  readonly id: string;
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
  readonly sender: Sender;
  /** Plain text with bot mentions stripped and rich text flattened. */
  readonly text: string;
  readonly images?: readonly ImageBlock[];
  /** Id of the message this one replies to, when the platform says. */
  readonly replyTo?: string;
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

/** A chat platform connection. Extra abilities (typing, streaming) are separate interfaces with type guards. */
export interface ChannelAdapter {
  readonly name: string;
  /** Connects and starts delivering inbound messages to `onMessage`. */
  start(onMessage: (message: InboundMessage) => void): Promise<void>;
  send(message: OutboundMessage): Promise<void>;
  status(): ChannelStatus;
  stop(): Promise<void>;
}
