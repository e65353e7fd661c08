import type { Logger, WebhookRequest, WebhookResponse } from "@almanac/core";
import type { EnabledFeishuSettings, FeishuSettings } from "./descriptor.js";
import type { FeishuCardActionEvent, FeishuReceiveEvent } from "./event-schema.js";

/** How Feishu delivers events: the SDK's long connection (no public URL needed) or HTTP POSTs to a request URL. */
export type FeishuMode = FeishuSettings["mode"];

/**
 * What the adapter reads of the validated `channels.feishu` block: App ID and App Secret (secret) from the
 * developer console, event delivery, the event subscription's Encrypt Key and Verification Token (secrets; webhook
 * mode), and the open platform base URL (Lark: `https://open.larksuite.com`).
 */
export type FeishuAdapterSettings = Pick<
  EnabledFeishuSettings,
  "appId" | "appSecret" | "mode" | "encryptKey" | "verificationToken" | "domain"
>;

/** Run-time options of {@link createFeishuAdapter}; all have defaults. */
export interface FeishuAdapterOptions {
  /** Account name in session keys, for several bots on one platform; default `"default"`. */
  readonly account?: string;
  readonly logger?: Logger;
  /** Retries of a platform call after a rate limit, network error or 5xx; default 3. */
  readonly maxRetries?: number;
  /** How long `start()` waits for the long connection before returning with state `connecting`; default 30000. */
  readonly connectTimeoutMs?: number;
  /** Reaction shown on the user's message while a turn runs; default `"Typing"`. */
  readonly typingEmoji?: string;
  /** Waits between retries (injected by tests); default a timer that stops early when the adapter stops. */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Clock for `receivedAt`, `lastEventAt` and the streamed card throttle; default `Date.now`. */
  readonly now?: () => number;
  /**
   * Runs a callback after some milliseconds: the streamed card throttle's timer (injected by tests with a fake
   * clock); default `setTimeout`.
   */
  readonly schedule?: (ms: number, callback: () => void) => void;
}

/** What a Feishu {@link InboundMessage} carries on `raw`: the event as delivered, ids included. */
export interface FeishuInboundRaw {
  /** `header.event_id`: changes when Feishu redelivers the same message. */
  readonly eventId?: string;
  readonly tenantKey?: string;
  readonly appId?: string;
  readonly chatType: string;
  readonly messageType: string;
  readonly rootId?: string;
  /** The topic (`omt_…`) the message is in; replies go into it. */
  readonly threadId?: string;
  /** The `event` object (`sender` and `message`) as Feishu sent it. */
  readonly event: FeishuReceiveEvent;
}

/**
 * What a button press (`card.action.trigger`) carries on `raw` when it arrives as an `InboundMessage`: the
 * card it was pressed on (answers reply to that card) and the chat the card was sent to.
 */
export interface FeishuCardActionRaw {
  readonly kind: "card_action";
  readonly eventId?: string;
  readonly tenantKey?: string;
  readonly appId?: string;
  /** The card message (`om_…`) the button is on. */
  readonly cardMessageId: string;
  readonly chatType: "p2p" | "group";
  /** The topic (`omt_…`) the card is in; answers go into it. */
  readonly threadId?: string;
  /** The `event` object (`operator`, `action`, `context`) as Feishu sent it. */
  readonly event: FeishuCardActionEvent;
}

/** The request the server's webhook route hands to {@link FeishuAdapter.handleWebhook} (core's shape). */
export type FeishuWebhookRequest = WebhookRequest;

/** What the server's webhook route answers (core's shape). `body` is JSON. */
export type FeishuWebhookResponse = WebhookResponse;
