/** Stream topic of robot message callbacks (`TOPIC_ROBOT` in `dingtalk-stream`). */
export const ROBOT_TOPIC = "/v1.0/im/bot/messages/get";

/**
 * Longest markdown/text body the fake accepts, in characters. DingTalk does not publish a limit for robot
 * markdown `text`; 5,000 characters is our documented working limit (the OpenAPI's documented limit is
 * 15,000 bytes for the whole `msgParam`, which the fake enforces too).
 */
export const DEFAULT_MARKDOWN_LIMIT = 5_000;

/** Documented limit of the OpenAPI `msgParam` (JSON text), in UTF-8 bytes. */
export const MSG_PARAM_BYTE_LIMIT = 15_000;

/** Template id of the AI card the fake knows, unless {@link FakeDingTalkOptions.cardTemplateId} names another. */
export const DEFAULT_CARD_TEMPLATE_ID = "fake-ai-card-template.schema";

/**
 * Largest upload per `media/upload` type, in bytes, as DingTalk documents them (image, video and file 20 MB,
 * voice 2 MB).
 */
export const MEDIA_UPLOAD_LIMITS = {
  image: 20 * 1024 * 1024,
  voice: 2 * 1024 * 1024,
  video: 20 * 1024 * 1024,
  file: 20 * 1024 * 1024,
} as const;

/** Options of {@link startFakeDingTalk}. */
export interface FakeDingTalkOptions {
  /** AppKey the fake accepts; default `dingfakeclientid`. */
  readonly clientId?: string;
  /** AppSecret the fake accepts; default `fake-client-secret`. */
  readonly clientSecret?: string;
  /** Robot code the OpenAPI accepts; default the client id (as for an internal app's robot). */
  readonly robotCode?: string;
  /** An unacknowledged CALLBACK is pushed again after this many ms (DingTalk: about 60 s); default 60,000. */
  readonly redeliverAfterMs?: number;
  /** How many times an unacknowledged CALLBACK is pushed again; default 3. */
  readonly maxRedeliveries?: number;
  /** Lifetime of a payload's `sessionWebhook`; default 90 minutes (what DingTalk hands out). */
  readonly sessionWebhookTtlMs?: number;
  /** `expireIn` of issued access tokens, in seconds; default 7,200. */
  readonly accessTokenTtlSeconds?: number;
  /** Longest markdown `text` / text `content` accepted, in characters; default {@link DEFAULT_MARKDOWN_LIMIT}. */
  readonly markdownLimit?: number;
  /** Delay between a SYSTEM `disconnect` frame and closing the socket; default 20 ms. */
  readonly disconnectGraceMs?: number;
  /** The one AI card template that exists; default {@link DEFAULT_CARD_TEMPLATE_ID}. */
  readonly cardTemplateId?: string;
}

/** A received picture, file, voice or video message (`msgtype` picture/file/audio/video), by its download code. */
export interface RobotMediaInput {
  readonly type: "picture" | "file" | "audio" | "video";
  /** The code {@link FakeDingTalk.addFile} registered the bytes under. */
  readonly downloadCode: string;
  /** File messages: the file's name. */
  readonly fileName?: string;
  /** Audio and video: length in milliseconds. */
  readonly duration?: number;
  /** Audio: DingTalk's own speech recognition of the voice message. */
  readonly recognition?: string;
}

/** Bytes {@link FakeDingTalk.addFile} serves for a download code. */
export interface FakeFileInput {
  readonly bytes: Uint8Array;
  /** `content-type` of the download; default `application/octet-stream`. */
  readonly contentType?: string;
  /** Sends `content-length` (default true); false streams the body chunked, its size unknown up front. */
  readonly declareLength?: boolean;
  /** Sends this many bytes, then nothing more until the client gives up (a download that hangs). */
  readonly stallAfterBytes?: number;
  /** The `downloadUrl` `messageFiles/download` answers instead of the fake's own (e.g. an address not to follow). */
  readonly downloadUrl?: string;
}

/** One fetch of a registered file's download URL. */
export interface DownloadRecord {
  readonly seq: number;
  readonly at: number;
  readonly downloadCode: string;
  /** Bytes written to the client. */
  readonly bytesSent: number;
  /** False when the client closed the connection before the whole body was sent. */
  readonly completed: boolean;
}

/** One write to an AI card: its creation (with the content of `cardParamMap`) or a `PUT card/streaming`. */
export interface CardUpdateRecord {
  readonly seq: number;
  readonly at: number;
  readonly kind: "create" | "stream";
  readonly content: string;
  readonly isFinalize: boolean;
  readonly isError: boolean;
}

/** An AI card the bot created, as it stands now. */
export interface CardRecord {
  readonly outTrackId: string;
  readonly cardTemplateId: string;
  /** `IM_ROBOT` (one-on-one chat with the robot) or `IM_GROUP`. */
  readonly spaceType: "IM_ROBOT" | "IM_GROUP";
  /** The user's staff id (IM_ROBOT) or the group's openConversationId (IM_GROUP). */
  readonly spaceId: string;
  /** What the card shows now. */
  readonly content: string;
  readonly finalized: boolean;
  /** Every write, creation first. */
  readonly updates: readonly CardUpdateRecord[];
}

/** A file the bot uploaded through `media/upload`. */
export interface UploadRecord {
  readonly seq: number;
  readonly at: number;
  readonly mediaId: string;
  readonly type: keyof typeof MEDIA_UPLOAD_LIMITS;
  readonly fileName: string;
  readonly contentType: string;
  readonly bytes: Uint8Array;
}

/** One piece of a rich-text message: text, or a picture known by its download code. */
export type RichTextPart = { readonly text: string } | { readonly picture: string };

/** What {@link FakeDingTalk.sendRobotMessage} pushes: a user talking to the robot. */
export interface RobotMessageInput {
  /** `single` = one-on-one chat (`conversationType "1"`), `group` = group chat (`"2"`). */
  readonly conversation: "single" | "group";
  /** Plain text (`msgtype: "text"`). DingTalk puts a leading space before group text; the fake does too. */
  readonly text?: string;
  /** Rich text (`msgtype: "richText"`); wins over `text`. */
  readonly richText?: readonly RichTextPart[];
  /** A picture, file, voice or video message; wins over `text` and `richText`. */
  readonly media?: RobotMediaInput;
  /** Sender's staff id (userid); default `staff-001`; `null` leaves it out (e.g. an external user). */
  readonly senderStaffId?: string | null;
  /** Sender's display name; default `Alice`. */
  readonly senderNick?: string;
  /** Encrypted sender id; default derived from the staff id. */
  readonly senderId?: string;
  /** Conversation id (the group's openConversationId); defaults per kind. */
  readonly conversationId?: string;
  /** Group title; default `Test Group` for groups. */
  readonly conversationTitle?: string;
  /** `isInAtList`; default `true` in groups (DingTalk only delivers mentions there), absent in single chats. */
  readonly isInAtList?: boolean;
  /** Message id (`msgId`); default generated. */
  readonly msgId?: string;
  /** Makes `sessionWebhookExpiredTime` already past. */
  readonly webhookExpired?: boolean;
  /** The payload claims a valid webhook, but the fake answers `300001 session 不存在` (revoked early). */
  readonly webhookRevoked?: boolean;
  /** Extra payload fields, merged last (for shapes the builder does not know). */
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** A CALLBACK the fake queued for the bot. */
export interface RobotDelivery {
  /** Stream frame id (`headers.messageId`), what acks and {@link FakeDingTalk.redeliver} use. */
  readonly messageId: string;
  /** DingTalk's message id in the payload (`msgId`). */
  readonly msgId: string;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly sessionWebhook: string;
}

/** A message the bot posted that DingTalk accepted. */
export interface SentMessage {
  /** Position in the fake's single event order (shared with acks, deliveries and rejections). */
  readonly seq: number;
  readonly at: number;
  readonly route: "sessionWebhook" | "openapi";
  /** `1` single chat, `2` group. */
  readonly conversationType: "1" | "2";
  /** Conversation the message went to (webhook: the session's; group OpenAPI: `openConversationId`). */
  readonly conversationId?: string;
  /** OpenAPI one-on-one recipients. */
  readonly userIds?: readonly string[];
  /** `image` (`sampleImageMsg`) and `file` (`sampleFile`) messages have empty `text`. */
  readonly msgtype: "markdown" | "text" | "image" | "file";
  readonly title?: string;
  readonly text: string;
  /** Image and file messages: the uploaded media's id. */
  readonly mediaId?: string;
  /** File messages: the name and type shown. */
  readonly fileName?: string;
  readonly fileType?: string;
  /** The request body as received. */
  readonly body: unknown;
}

/** A CALLBACK acknowledgement the bot sent on the stream. */
export interface AckRecord {
  readonly seq: number;
  readonly at: number;
  readonly messageId: string;
  readonly msgId: string;
  /** Milliseconds between the (last) push and this ack. */
  readonly latencyMs: number;
  /** Parsed `data` of the ack frame. */
  readonly data: unknown;
}

/** One push of a CALLBACK frame on a connection. */
export interface DeliveryRecord {
  readonly seq: number;
  readonly at: number;
  readonly messageId: string;
  readonly msgId: string;
  /** 0 for the first push, 1.. for redeliveries. */
  readonly attempt: number;
  readonly connectionId: number;
}

/** A request the fake refused the way DingTalk does. */
export interface RejectionRecord {
  readonly seq: number;
  readonly at: number;
  readonly route:
    | "connections"
    | "accessToken"
    | "sessionWebhook"
    | "openapi"
    | "stream"
    | "card"
    | "messageFiles"
    | "media";
  readonly status: number;
  /** DingTalk's `code` (OpenAPI) or `errcode` (webhook), as text. */
  readonly code: string;
  readonly message: string;
}

/** A stream connection the bot opened. */
export interface ConnectionRecord {
  readonly id: number;
  readonly openedAt: number;
  readonly closedAt?: number;
  readonly subscriptions: readonly { readonly type: string; readonly topic: string }[];
  readonly ua?: string;
}

/** Which route {@link FakeDingTalk.rateLimitNext} throttles (`openapi`: robot messages; `card`: card writes). */
export type ThrottledRoute = "sessionWebhook" | "openapi" | "card" | "any";

/**
 * A running fake DingTalk: stream gateway, sessionWebhooks, robot OpenAPI, message files, AI cards and the older
 * API's media upload on one 127.0.0.1 port.
 */
export interface FakeDingTalk {
  /** `http://127.0.0.1:<port>`: pass it as the gateway, the OpenAPI and the older API's (oapi) base URL. */
  readonly url: string;
  /** The AI card template that exists. */
  readonly cardTemplateId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly robotCode: string;
  /** Queues a robot CALLBACK and pushes it on the open connection (or on the next one). */
  sendRobotMessage(input: RobotMessageInput): RobotDelivery;
  /** Pushes an earlier CALLBACK again (same frame id and payload), as DingTalk does when it saw no ack. */
  redeliver(messageId: string): void;
  /** Sends a SYSTEM ping; resolves when the bot echoed it correctly, rejects after `timeoutMs` (2,000). */
  ping(timeoutMs?: number): Promise<void>;
  /** Sends a SYSTEM `disconnect` frame, then closes the socket (the bot must reconnect). */
  disconnect(reason?: string): void;
  /** Cuts the socket without a close handshake (network failure). */
  dropConnection(): void;
  /**
   * Makes the open connection half-open: its TCP socket stays up, but the fake stops reading it (no pong to
   * WebSocket pings, acks unseen) and pushes nothing more on it; new CALLBACKs wait for the bot's next connection.
   * Only a keep-alive on the bot's side notices. The stalled socket stays open until {@link close}.
   */
  stallConnection(): void;
  /** Number of WebSocket (protocol-level) pings the bot has sent, over all connections. */
  clientPings(): number;
  /** Makes the next `times` (1) sends on `route` fail with DingTalk's throttling error. */
  rateLimitNext(options?: { readonly route?: ThrottledRoute; readonly times?: number }): void;
  /** Invalidates every issued access token (the bot must fetch a new one). */
  expireAccessTokens(): void;
  /**
   * Registers the bytes of a received file under `downloadCode`: `messageFiles/download` answers a URL on the
   * fake (`GET /files/…`) that serves them.
   */
  addFile(downloadCode: string, file: FakeFileInput): void;
  /** Fetches of files' download URLs, in order. */
  downloads(): readonly DownloadRecord[];
  /** AI cards the bot created, in order of creation, each as it stands now. */
  cards(): readonly CardRecord[];
  /** Files uploaded through `media/upload`, in order. */
  uploads(): readonly UploadRecord[];
  /** Messages the bot posted, accepted ones only, in order. */
  sent(): readonly SentMessage[];
  acks(): readonly AckRecord[];
  deliveries(): readonly DeliveryRecord[];
  rejections(): readonly RejectionRecord[];
  connections(): readonly ConnectionRecord[];
  /** Protocol violations seen (bad frames, acks for unknown messages, wrong ping echoes); should stay empty. */
  problems(): readonly string[];
  /** Number of `POST /v1.0/oauth2/accessToken` calls that issued a token. */
  tokensIssued(): number;
  /** True while a stream connection is open (a stalled one does not count). */
  isConnected(): boolean;
  /** Closes every socket, timer and the HTTP server. */
  close(): Promise<void>;
}
