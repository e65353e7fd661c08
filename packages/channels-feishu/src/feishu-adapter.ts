import {
  type AttachmentDownloadAdapter,
  type ChannelStatus,
  type DownloadedAttachment,
  type DownloadLimits,
  describeError,
  type FileSendingAdapter,
  type InboundAttachment,
  type InboundMessage,
  InternalError,
  type OutboundFile,
  type OutboundMessage,
  type ReplyStream,
  type StreamingReplyAdapter,
  type TypingIndicatorAdapter,
  type WebhookAdapter,
} from "@almanac/core";
import * as lark from "@larksuiteoapi/node-sdk";
import { z } from "zod";
import { type ResolvedFeishuConfig, resolveFeishuConfig } from "./config.js";
import { buildCard, type CardActionAnswer, cardMessageOf, toCardPress } from "./convert-card.js";
import { FEISHU_CHANNEL, toInboundMessage } from "./convert-inbound.js";
import { FeishuApiError } from "./errors.js";
import { cardActionEventSchema, receiveEventSchema } from "./event-schema.js";
import { createFeishuApi, type FeishuApi } from "./feishu-api.js";
import { createFeishuResourceApi, type FeishuResourceApi } from "./feishu-resources.js";
import { planUpload } from "./outbound-file.js";
import { OutboundSender } from "./outbound-sender.js";
import { CardThrottle, FeishuReplyStream } from "./reply-stream.js";
import { createSdkLogger } from "./sdk-logger.js";
import type {
  FeishuAdapterOptions,
  FeishuAdapterSettings,
  FeishuWebhookRequest,
  FeishuWebhookResponse,
} from "./types.js";
import { openWebhook } from "./webhook.js";

const RECEIVE_EVENT = "im.message.receive_v1";
/** A button pressed on a card (the callback of the new card version, 卡片回传交互). */
const CARD_ACTION_EVENT = "card.action.trigger";

/**
 * The Feishu/Lark channel: receives `im.message.receive_v1` over the SDK's long connection (or webhooks handed
 * in by the server), normalizes it, and answers with Markdown posts threaded to the message. A message with
 * buttons goes out as an interactive card; a press (`card.action.trigger`, same transport) comes back as the
 * message the button stands for. While a turn runs it shows a "Typing" reaction on the user's message. It downloads
 * what people send (message resources), streams replies into cards, and uploads images and files. Dedup,
 * allowlists and mention gating are the server's.
 */
export class FeishuAdapter
  implements
    TypingIndicatorAdapter,
    WebhookAdapter,
    AttachmentDownloadAdapter,
    StreamingReplyAdapter,
    FileSendingAdapter
{
  readonly name = FEISHU_CHANNEL;
  /**
   * Sends with an `idempotencyKey` carry a `uuid` made from it: Feishu posts at most one message per uuid within an
   * hour (docs/channels/feishu.md).
   */
  readonly idempotentSends = true;
  /** Feishu sends at most one message per uuid within one hour; a repeat later than 55 minutes is not trusted. */
  readonly idempotencyWindowMs = 55 * 60_000;
  private readonly config: ResolvedFeishuConfig;
  private readonly api: FeishuApi;
  /** Same client, no retries: a typing reaction is not worth waiting for. */
  private readonly quickApi: FeishuApi;
  private readonly dispatcher: lark.EventDispatcher;
  private readonly stopping = new AbortController();
  private readonly outbound: OutboundSender;
  private readonly resources: FeishuResourceApi;
  /** One card request a second per conversation, across all its streamed replies. */
  private readonly cardThrottle: CardThrottle;
  private wsClient: lark.WSClient | undefined;
  private onMessage: ((message: InboundMessage) => void) | undefined;
  private botOpenId: string | undefined;
  private started = false;
  private state: ChannelStatus["state"] = "connecting";
  private detail: string | undefined = "not started";
  private lastEventAt: number | undefined;

  /** True in webhook mode: the server then exposes `POST /channels/feishu/webhook` for {@link handleWebhook}. */
  get receivesWebhooks(): boolean {
    return this.config.mode === "webhook";
  }

  /** `settings` come validated from the configuration schema (`feishuChannel.settings`). */
  constructor(settings: FeishuAdapterSettings, options: FeishuAdapterOptions = {}) {
    this.config = resolveFeishuConfig(settings, options);
    const { logger } = this.config;
    const secrets = [
      this.config.appSecret,
      this.config.encryptKey ?? "",
      this.config.verificationToken ?? "",
    ];
    const quiet = createSdkLogger(
      logger,
      { error: "debug", warn: "debug", info: "debug", debug: "debug", trace: "debug" },
      secrets,
    );
    const client = new lark.Client({
      appId: this.config.appId,
      appSecret: this.config.appSecret,
      domain: this.config.domain,
      cache: new lark.DefaultCache(), // the SDK's default token cache is shared by the whole process
      logger: quiet,
      loggerLevel: lark.LoggerLevel.warn,
    });
    const apiOptions = { client, logger, sleep: this.config.sleep, signal: this.stopping.signal };
    this.api = createFeishuApi({ ...apiOptions, maxRetries: this.config.maxRetries });
    this.quickApi = createFeishuApi({ ...apiOptions, maxRetries: 0 });
    this.outbound = new OutboundSender({ api: this.api, account: this.config.account, logger });
    this.resources = createFeishuResourceApi({ client, domain: this.config.domain });
    this.cardThrottle = new CardThrottle({ now: this.config.now, schedule: this.config.schedule });
    this.dispatcher = new lark.EventDispatcher({
      logger: quiet,
      loggerLevel: lark.LoggerLevel.warn,
    }).register({
      [RECEIVE_EVENT]: (data: unknown) => {
        this.receive(data);
        return undefined;
      },
      [CARD_ACTION_EVENT]: (data: unknown) => this.press(data),
    });
  }

  /** Looks up the bot's identity, then opens the long connection (websocket mode) or waits for webhooks. */
  async start(onMessage: (message: InboundMessage) => void): Promise<void> {
    if (this.started)
      throw new InternalError("feishu.already_started", "The Feishu adapter was already started.");
    this.started = true;
    this.setState("connecting", "looking up the bot");
    try {
      this.botOpenId = await this.api.botOpenId();
    } catch (error) {
      this.setState("error", describeError(error));
      throw error;
    }
    this.onMessage = onMessage;
    if (this.config.mode === "webhook") {
      this.setState("ready", undefined);
      return;
    }
    await this.connect();
  }

  /**
   * Sends Markdown as one or more posts (≤ 30 KB each), as replies to `inReplyTo` when given. With `buttons`, the
   * last piece is an interactive card showing them; a press comes back as an inbound message (see `press`). With
   * `message.idempotencyKey` sending it again within an hour does not repeat it.
   */
  async send(message: OutboundMessage): Promise<void> {
    await this.outbound.send(message);
  }

  /**
   * Downloads an image, file, voice message or video of `message` through the message resource API (images with
   * `type=image`, the rest with `type=file`), stopping past `limits.maxBytes` (`AttachmentTooLargeError`) or when
   * `limits.signal` aborts. Needs the app permission to read message resources (`im:resource`).
   */
  async downloadAttachment(
    message: InboundMessage,
    attachment: InboundAttachment,
    limits: DownloadLimits,
  ): Promise<DownloadedAttachment> {
    if (attachment.id === undefined) {
      throw new FeishuApiError(
        "feishu.invalid_response",
        "The Feishu message names no resource to download.",
        {
          isRetryable: false,
        },
      );
    }
    const type = attachment.kind === "image" ? "image" : "file";
    const downloaded = await this.resources.download(message.id, attachment.id, type, limits);
    const name = attachment.name ?? downloaded.name;
    return { ...downloaded, ...(name === undefined ? {} : { name }) };
  }

  /**
   * Streams a reply into interactive cards where {@link send} would post it: a card on the first text, edited
   * at most once a second per conversation, continued in a new card past the card limit; `finish` shows exactly
   * the final text, or sends what the cards do not show when Feishu refuses an edit.
   */
  startReplyStream(message: OutboundMessage): ReplyStream {
    return new FeishuReplyStream({
      transport: this.outbound.cardStreamTransport(message),
      throttle: this.cardThrottle,
      conversation: message.sessionKey,
      logger: this.config.logger,
    });
  }

  /**
   * Uploads `file` and sends it where {@link send} would post an answer: an image up to 10 MB as an image message,
   * anything else up to 30 MB as a file (an Opus recording as a voice message); the caption follows as a message.
   * @throws UserError `feishu.upload_too_large` over 30 MB
   */
  async sendFile(file: OutboundFile): Promise<void> {
    const plan = planUpload(file);
    const target = { sessionKey: file.sessionKey, inReplyTo: file.inReplyTo };
    if (plan.kind === "image") {
      const imageKey = await this.resources.uploadImage(file.bytes, file.name);
      await this.outbound.sendUploaded(target, "image", JSON.stringify({ image_key: imageKey }));
    } else {
      const fileKey = await this.resources.uploadFile(file.bytes, file.name, plan.fileType);
      await this.outbound.sendUploaded(target, plan.msgType, JSON.stringify({ file_key: fileKey }));
    }
    const caption = file.caption?.trim();
    if (caption) {
      await this.outbound.send({
        sessionKey: file.sessionKey,
        text: caption,
        ...(file.inReplyTo === undefined ? {} : { inReplyTo: file.inReplyTo }),
      });
    }
  }

  /** Adds the typing reaction to the user's message; the returned function removes it. Never throws. */
  async startTyping(message: InboundMessage): Promise<() => Promise<void>> {
    const { logger, typingEmoji } = this.config;
    // A press shows it on the card pressed.
    const target = cardMessageOf(message) ?? message.id;
    let reactionId: string;
    try {
      reactionId = await this.quickApi.addReaction(target, typingEmoji);
    } catch (error) {
      logger.debug({ messageId: target, error: describeError(error) }, "Feishu typing reaction not added");
      return async () => {};
    }
    return async () => {
      try {
        await this.quickApi.removeReaction(target, reactionId);
      } catch (error) {
        logger.debug(
          { messageId: target, error: describeError(error) },
          "Feishu typing reaction not removed",
        );
      }
    };
  }

  /** `connecting` until the bot is known and the long connection (if any) is up, `ready`, `error` with the reason, `disabled` once stopped. */
  status(): ChannelStatus {
    return {
      channel: FEISHU_CHANNEL,
      state: this.state,
      ...(this.detail === undefined ? {} : { detail: this.detail }),
      ...(this.lastEventAt === undefined ? {} : { lastEventAt: this.lastEventAt }),
    };
  }

  /** Closes the long connection and cancels pending retries. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.onMessage = undefined;
    this.wsClient?.close({ force: true });
    this.wsClient = undefined;
    this.setState("disabled", "stopped");
  }

  /**
   * Handles one request to the webhook route (`POST /channels/feishu/webhook`): verifies the signature and token,
   * decrypts, answers `url_verification`, and hands a message event (or a button press) to `onMessage` before
   * answering 200; a press is answered with its toast and card. A request that fails verification is answered
   * 401 and nothing is processed.
   */
  async handleWebhook(request: FeishuWebhookRequest): Promise<FeishuWebhookResponse> {
    if (this.config.mode !== "webhook") {
      return failure(404, "feishu.webhook_disabled", "The Feishu adapter runs in websocket mode.");
    }
    if (this.onMessage === undefined) {
      return failure(503, "feishu.not_started", "The Feishu adapter is not running.");
    }
    const verdict = openWebhook(request, this.config, this.config.now());
    if (verdict.kind === "reject") {
      this.config.logger.warn({ code: verdict.code, status: verdict.status }, verdict.message);
      return failure(verdict.status, verdict.code, verdict.message);
    }
    if (verdict.kind === "challenge") return { status: 200, body: { challenge: verdict.challenge } };
    let body: Record<string, unknown> = {};
    try {
      const result: unknown = await this.dispatcher.invoke(verdict.payload, { needCheck: false });
      // A card callback is answered in the response (toast, card); the SDK answers others with a note, not sent.
      const answer = callbackAnswerSchema.safeParse(result);
      if (answer.success) body = answer.data;
    } catch (error) {
      this.config.logger.error({ error: describeError(error) }, "Feishu webhook event failed");
    }
    return { status: 200, body };
  }

  private async connect(): Promise<void> {
    const { appId, appSecret, domain, logger, connectTimeoutMs } = this.config;
    const secrets = [appSecret, this.config.encryptKey ?? "", this.config.verificationToken ?? ""];
    let settle: (outcome: Error | undefined) => void = () => {};
    const firstOutcome = new Promise<Error | undefined>((resolve) => {
      settle = resolve;
    });
    const wsClient = new lark.WSClient({
      appId,
      appSecret,
      domain,
      logger: createSdkLogger(
        logger,
        { error: "warn", warn: "warn", info: "debug", debug: "debug", trace: "debug" },
        secrets,
      ),
      loggerLevel: lark.LoggerLevel.info,
      autoReconnect: true,
      handshakeTimeoutMs: 10_000,
      // Without it a silently dead connection is only noticed when TCP gives up.
      wsConfig: { pingTimeout: 30 },
      onReady: () => {
        this.setState("ready", undefined);
        settle(undefined);
      },
      onReconnecting: () => this.setState("connecting", "reconnecting the long connection"),
      onReconnected: () => this.setState("ready", undefined),
      onError: (error) => {
        this.setState("error", error.message);
        settle(error);
      },
    });
    this.wsClient = wsClient;
    this.setState("connecting", "opening the long connection");
    await wsClient.start({ eventDispatcher: this.dispatcher });
    const timer = setTimeout(() => settle(undefined), connectTimeoutMs);
    const onStop = () => settle(undefined);
    this.stopping.signal.addEventListener("abort", onStop, { once: true });
    const outcome = await firstOutcome;
    clearTimeout(timer);
    this.stopping.signal.removeEventListener("abort", onStop);
    if (this.stopping.signal.aborted) return;
    if (outcome !== undefined) {
      wsClient.close({ force: true });
      throw new FeishuApiError("feishu.connect_failed", `Feishu long connection failed: ${outcome.message}`, {
        isRetryable: false,
      });
    }
    if (this.state !== "ready") {
      logger.warn({ connectTimeoutMs }, "Feishu long connection not ready yet; the SDK keeps trying");
    }
  }

  /** Normalizes one event and hands it over; never throws (the SDK acks once this returns). */
  private receive(data: unknown): void {
    const { logger, now, account } = this.config;
    const parsed = receiveEventSchema.safeParse(data);
    if (!parsed.success) {
      logger.warn({ issues: parsed.error.issues.slice(0, 3) }, "Ignoring a malformed Feishu message event");
      return;
    }
    const event = parsed.data;
    const botOpenId = this.botOpenId;
    const onMessage = this.onMessage;
    if (botOpenId === undefined || onMessage === undefined) return;
    if (event.sender.sender_id?.open_id === botOpenId) return; // our own message echoed back
    const receivedAt = now();
    this.lastEventAt = receivedAt;
    const message = toInboundMessage(event, { account, botOpenId, receivedAt });
    this.outbound.rememberThread(event.message.thread_id, event.message.message_id);
    try {
      onMessage(message);
    } catch (error) {
      logger.error(
        { messageId: message.id, error: describeError(error) },
        "onMessage threw for a Feishu message",
      );
    }
  }

  /**
   * Reads a button press (`card.action.trigger`) and hands it over as the message the button stands for; the
   * callback's answer (a toast, and in a direct chat the card without its buttons) goes back in the response,
   * which Feishu wants within 3 s. Never throws.
   */
  private press(data: unknown): CardActionAnswer | undefined {
    const { logger, now, account } = this.config;
    const parsed = cardActionEventSchema.safeParse(data);
    if (!parsed.success) {
      logger.warn({ issues: parsed.error.issues.slice(0, 3) }, "Ignoring a malformed Feishu card action");
      return undefined;
    }
    const onMessage = this.onMessage;
    if (onMessage === undefined) return undefined;
    const receivedAt = now();
    const press = toCardPress(parsed.data, { account, receivedAt });
    if (press.kind === "ignored") return undefined;
    if (press.kind === "refused") return { toast: { type: "error", content: press.reason } };
    this.lastEventAt = receivedAt;
    try {
      onMessage(press.message);
    } catch (error) {
      logger.error(
        { messageId: press.message.id, error: describeError(error) },
        "onMessage threw for a Feishu card action",
      );
    }
    const toast = { type: "info", content: `Sent: ${press.message.text}` } as const;
    // In a direct chat nobody else could press: the buttons go, so a second press is impossible. In a group they
    // stay, because a press by someone who may not answer must not take them away from the person who may.
    const cardMessageId = parsed.data.context.open_message_id;
    const markdown = press.place.chatType === "p2p" ? this.outbound.takeCardText(cardMessageId) : undefined;
    if (markdown === undefined) return { toast };
    return { toast, card: { type: "raw", data: buildCard(markdown, [], press.place, toast.content) } };
  }

  private setState(state: ChannelStatus["state"], detail: string | undefined): void {
    if (this.state === "disabled") return;
    this.state = state;
    this.detail = detail;
  }
}

/**
 * Creates the Feishu/Lark adapter from validated settings. Nothing connects until `start`.
 * @throws UserError `feishu.config_invalid` for webhook mode without an Encrypt Key or Verification Token.
 */
export function createFeishuAdapter(
  settings: FeishuAdapterSettings,
  options: FeishuAdapterOptions = {},
): FeishuAdapter {
  return new FeishuAdapter(settings, options);
}

/** What a card callback's handler returns (the SDK answers events without a handler with a string). */
const callbackAnswerSchema = z.record(z.string(), z.unknown());

function failure(status: number, code: string, message: string): FeishuWebhookResponse {
  return { status, body: { error: { code, message } } };
}
