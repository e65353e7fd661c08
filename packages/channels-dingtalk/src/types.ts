import type { Logger } from "@almanac/core";
import type { EnabledDingTalkSettings } from "./descriptor.js";
import type { RobotPayload } from "./robot-payload.js";

/** Time source of the adapter; injected in tests so expiry and retry delays need no real waiting. */
export interface DingTalkClock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Resolves after `ms`, or early when `signal` aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * What the adapter reads of the validated `channels.dingtalk` block: the app's Client ID (formerly AppKey) and
 * Client Secret (formerly AppSecret; never logged), the robot code used by the OpenAPI (unset: the client id, as an
 * internal app's robot has the app's key as code), the base URLs of `POST /v1.0/gateway/connections/open`, of the
 * OpenAPI (access token, robot messages, files, cards) and of the older API (media upload), and the AI card
 * template replies are streamed into (unset: no streaming).
 */
export type DingTalkAdapterSettings = Pick<
  EnabledDingTalkSettings,
  "clientId" | "clientSecret" | "robotCode" | "gatewayUrl" | "apiBaseUrl" | "oapiBaseUrl" | "cardTemplateId"
>;

/** Run-time options of {@link createDingTalkAdapter}; all have defaults. */
export interface DingTalkAdapterOptions {
  /** Bot account name in session keys; default `default`. */
  readonly account?: string;
  /** Structured logger; default silent. */
  readonly logger?: Logger;
  /** Wait before retrying a throttled send (times the attempt number); default 1,000 ms. */
  readonly throttleRetryDelayMs?: number;
  /** Retries of a throttled send before `dingtalk.rate_limited` surfaces; default 3. */
  readonly throttleRetries?: number;
  /** Timeout of each HTTP request and of the WebSocket handshake; default 15,000 ms. */
  readonly requestTimeoutMs?: number;
  /** How often the stream socket is checked and sent a WebSocket ping; default 10,000 ms. */
  readonly keepAliveIntervalMs?: number;
  /**
   * Silence (no frame, no pong) after which the stream connection counts as dead and is replaced; must exceed
   * `keepAliveIntervalMs`; default 30,000 ms.
   */
  readonly keepAliveTimeoutMs?: number;
  /** Time source; default the system clock. */
  readonly clock?: DingTalkClock;
}

/** The adapter's settings and options with every default applied. */
export interface ResolvedDingTalkConfig {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly robotCode: string;
  readonly account: string;
  readonly gatewayUrl: string;
  readonly apiBaseUrl: string;
  readonly oapiBaseUrl: string;
  /** The AI card template replies stream into; undefined: replies are sent whole. */
  readonly cardTemplateId: string | undefined;
  readonly logger: Logger;
  readonly throttleRetryDelayMs: number;
  readonly throttleRetries: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveIntervalMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly clock: DingTalkClock;
}

/**
 * What a DingTalk {@link InboundMessage} keeps on `raw`: the stream frame id and the robot payload
 * (including `sessionWebhook`, which `send` uses to reply). Plain JSON, so it survives persistence.
 */
export interface DingTalkInboundRaw {
  /** `headers.messageId` of the CALLBACK frame (DingTalk's delivery id; `InboundMessage.id` is `msgId`). */
  readonly streamMessageId: string;
  readonly payload: RobotPayload;
}

/** A DingTalk markdown message (`msgtype: "markdown"` / `msgKey: "sampleMarkdown"`). */
export interface MarkdownMessage {
  readonly title: string;
  readonly text: string;
}

/** Where a reply goes: the conversation, and the inbound's sessionWebhook while it may still work. */
export interface DeliveryPlan {
  readonly target:
    | { readonly kind: "dm"; readonly staffId: string | undefined }
    | { readonly kind: "group"; readonly openConversationId: string };
  readonly webhook?: { readonly url: string; readonly expiresAt: number };
}
