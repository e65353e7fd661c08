import type {
  AttachmentDownloadAdapter,
  ChannelStatus,
  DownloadedAttachment,
  DownloadLimits,
  FileSendingAdapter,
  InboundAttachment,
  InboundMessage,
  OutboundFile,
  OutboundMessage,
  ReplyStream,
  StreamingReplyAdapter,
} from "@almanac/core";
import { AccessTokenCache } from "./access-token.js";
import { CardApi, type CardTarget } from "./card-api.js";
import { CardReplyStream } from "./card-reply-stream.js";
import { resolveDingTalkConfig } from "./config.js";
import { DINGTALK_CHANNEL, toInboundMessage } from "./convert-inbound.js";
import { DINGTALK_MARKDOWN_LIMIT, toDeliveryPlan, toMarkdownMessages } from "./convert-outbound.js";
import { downloadMessageFile } from "./download-message-file.js";
import { DingTalkError } from "./errors.js";
import { MediaUploader, mediaTypeOf } from "./media-upload.js";
import { OpenApiClient } from "./open-api-client.js";
import { type RobotMessageBody, RobotOpenApi } from "./robot-api.js";
import { parseRobotPayload } from "./robot-payload.js";
import { RobotSender } from "./robot-sender.js";
import { DingTalkStreamClient, type RobotFrame } from "./stream-client.js";
import type {
  DeliveryPlan,
  DingTalkAdapterOptions,
  DingTalkAdapterSettings,
  ResolvedDingTalkConfig,
} from "./types.js";

/**
 * DingTalk in Stream mode: receives robot messages over `dingtalk-stream`'s WebSocket (acked on arrival),
 * replies through the message's sessionWebhook or the robot OpenAPI, reconnects on its own, and replaces a
 * connection that went silent (half-open) after `keepAliveTimeoutMs`. Downloads what people send by its download
 * code and sends files through the media upload. Streams replies only as {@link DingTalkCardAdapter}.
 * Dedup, allowlists and mention gating are the server gate's job (`id`, `mentioned`, `conversation.kind` are set).
 */
export class DingTalkAdapter implements AttachmentDownloadAdapter, FileSendingAdapter {
  readonly name = DINGTALK_CHANNEL;
  protected readonly config: ResolvedDingTalkConfig;
  protected readonly openApiClient: OpenApiClient;
  private readonly openApi: RobotOpenApi;
  private readonly sender: RobotSender;
  private readonly media: MediaUploader;
  private phase: "idle" | "running" | "stopped" = "idle";
  private client: DingTalkStreamClient | undefined;
  private onMessage: ((message: InboundMessage) => void) | undefined;

  /** `settings` come validated from the configuration schema (`dingtalkChannel.settings`). */
  constructor(settings: DingTalkAdapterSettings, options: DingTalkAdapterOptions = {}) {
    this.config = resolveDingTalkConfig(settings, options);
    const { apiBaseUrl, clientId, clientSecret, requestTimeoutMs, clock, logger } = this.config;
    const tokens = new AccessTokenCache({
      apiBaseUrl,
      clientId,
      clientSecret,
      timeoutMs: requestTimeoutMs,
      clock,
    });
    this.openApiClient = new OpenApiClient({ apiBaseUrl, tokens, timeoutMs: requestTimeoutMs });
    this.openApi = new RobotOpenApi({ client: this.openApiClient, robotCode: this.config.robotCode });
    this.media = new MediaUploader({
      oapiBaseUrl: this.config.oapiBaseUrl,
      tokens,
      timeoutMs: requestTimeoutMs,
    });
    this.sender = new RobotSender({
      openApi: this.openApi,
      clock,
      logger,
      throttleRetries: this.config.throttleRetries,
      throttleRetryDelayMs: this.config.throttleRetryDelayMs,
      requestTimeoutMs,
    });
  }

  /**
   * Connects and starts delivering messages. Resolves after the first connection attempt: connected, or failed
   * for a passing reason (retried in the background; `status()` says `connecting`).
   * @throws DingTalkError `dingtalk.auth_failed` when DingTalk refused the credentials (status `error`, no retry);
   * `dingtalk.lifecycle` when started twice.
   */
  async start(onMessage: (message: InboundMessage) => void): Promise<void> {
    if (this.phase !== "idle") {
      throw new DingTalkError(
        "dingtalk.lifecycle",
        `DingTalk adapter cannot start: it is already ${this.phase}.`,
      );
    }
    this.phase = "running";
    this.onMessage = onMessage;
    const client = new DingTalkStreamClient({
      clientId: this.config.clientId,
      clientSecret: this.config.clientSecret,
      gatewayUrl: this.config.gatewayUrl,
      requestTimeoutMs: this.config.requestTimeoutMs,
      keepAliveIntervalMs: this.config.keepAliveIntervalMs,
      keepAliveTimeoutMs: this.config.keepAliveTimeoutMs,
      logger: this.config.logger,
      clock: this.config.clock,
      onRobotFrame: (frame) => this.receive(frame),
    });
    this.client = client;
    await client.start();
    const { halted } = client.state();
    if (halted !== undefined) throw halted;
  }

  /**
   * Sends Markdown as DingTalk markdown messages (split within the limit, code fences kept whole): through
   * `inReplyTo`'s sessionWebhook while it is valid, else through the robot OpenAPI (DM → `oToMessages/batchSend`
   * to the staff id, group → `groupMessages/send`). Works whether or not the stream is connected.
   * @throws DingTalkError with DingTalk's words (`dingtalk.send_failed`, `dingtalk.rate_limited`,
   * `dingtalk.target_invalid`, `dingtalk.auth_failed`, `dingtalk.network`, `dingtalk.bad_response`).
   */
  async send(message: OutboundMessage): Promise<void> {
    const plan = toDeliveryPlan(message, this.config.account);
    const messages = toMarkdownMessages(message.text);
    if (messages.length === 0) return;
    await this.sender.send(plan, messages);
  }

  /**
   * Downloads a picture, file, voice or video message (or a rich-text picture) by its download code (the
   * attachment's `id`), within `limits`. See {@link downloadMessageFile}.
   * @throws AttachmentTooLargeError past `limits.maxBytes`; DingTalkError `dingtalk.download_failed` for an
   * attachment without a download code, or as {@link downloadMessageFile}
   */
  async downloadAttachment(
    _message: InboundMessage,
    attachment: InboundAttachment,
    limits: DownloadLimits,
  ): Promise<DownloadedAttachment> {
    if (attachment.id === undefined) {
      throw new DingTalkError(
        "dingtalk.download_failed",
        `This DingTalk ${attachment.kind} has no download code.`,
        {
          retryable: false,
        },
      );
    }
    const downloaded = await downloadMessageFile(
      { openApi: this.openApi, apiBaseUrl: this.config.apiBaseUrl },
      attachment.id,
      limits,
    );
    return { ...downloaded, ...(attachment.name === undefined ? {} : { name: attachment.name }) };
  }

  /**
   * Sends a file to the conversation: uploaded through DingTalk's media upload, then posted by the robot OpenAPI
   * as a picture (JPEG, PNG, GIF, BMP) or a file message; the caption follows as a message of its own.
   * @throws DingTalkError `dingtalk.upload_too_large` over DingTalk's 20 MB, `dingtalk.target_invalid`, or the
   * upload's and the send's errors
   */
  async sendFile(file: OutboundFile): Promise<void> {
    const plan = toDeliveryPlan(
      {
        sessionKey: file.sessionKey,
        text: "",
        ...(file.inReplyTo === undefined ? {} : { inReplyTo: file.inReplyTo }),
      },
      this.config.account,
    );
    const type = mediaTypeOf(file.contentType);
    const mediaId = await this.media.upload(type, file.name, file.contentType, file.bytes);
    const body: RobotMessageBody =
      type === "image"
        ? { msgKey: "sampleImageMsg", msgParam: { photoURL: mediaId } }
        : {
            msgKey: "sampleFile",
            msgParam: { mediaId, fileName: file.name, fileType: fileTypeOf(file.name) },
          };
    await this.sender.sendThroughOpenApi(plan.target, body);
    if (file.caption !== undefined && file.caption.trim() !== "") {
      await this.send({
        sessionKey: file.sessionKey,
        text: file.caption,
        ...(file.inReplyTo === undefined ? {} : { inReplyTo: file.inReplyTo }),
      });
    }
  }

  /**
   * `ready` while the stream socket is open and heard from; `error` after a credential refusal; `connecting`
   * otherwise, with a detail that starts `reconnecting:` when a live connection was lost (closed, or silent past
   * `keepAliveTimeoutMs`).
   */
  status(): ChannelStatus {
    const base = { channel: DINGTALK_CHANNEL } as const;
    if (this.phase === "idle") return { ...base, state: "disabled", detail: "not started" };
    const state = this.client?.state();
    const lastEventAt = state?.lastFrameAt === undefined ? {} : { lastEventAt: state.lastFrameAt };
    if (this.phase === "stopped") return { ...base, state: "disabled", detail: "stopped", ...lastEventAt };
    if (state?.halted !== undefined)
      return { ...base, state: "error", detail: state.halted.message, ...lastEventAt };
    if (state?.connected === true) return { ...base, state: "ready", ...lastEventAt };
    const detail = state?.lastProblem ?? "connecting to the DingTalk stream gateway";
    return { ...base, state: "connecting", detail, ...lastEventAt };
  }

  /** Stops reconnecting and closes the stream. Idempotent. */
  async stop(): Promise<void> {
    if (this.phase === "stopped") return;
    this.phase = "stopped";
    await this.client?.stop();
  }

  /** Normalizes one acked robot frame and hands it on; nothing here may throw into the SDK. */
  private receive(frame: RobotFrame): void {
    const { logger } = this.config;
    const parsed = parseRobotPayload(frame.data);
    if (!parsed.ok) {
      logger.warn({ messageId: frame.messageId, reason: parsed.reason }, "DingTalk robot payload ignored");
      return;
    }
    let message: InboundMessage;
    try {
      message = toInboundMessage(parsed.payload, {
        account: this.config.account,
        streamMessageId: frame.messageId,
        receivedAt: this.config.clock.now(),
      });
    } catch (error) {
      logger.warn(
        { messageId: frame.messageId, error: String(error) },
        "DingTalk robot message not normalized",
      );
      return;
    }
    if (this.phase !== "running" || this.onMessage === undefined) return;
    try {
      const result: unknown = this.onMessage(message);
      // `onMessage` is typed to return nothing, but an async handler's rejection must not go unhandled.
      if (result instanceof Promise) {
        result.catch((error: unknown) =>
          logger.error({ error: String(error) }, "DingTalk onMessage rejected"),
        );
      }
    } catch (error) {
      logger.error({ id: message.id, error: String(error) }, "DingTalk onMessage threw");
    }
  }
}

/**
 * The DingTalk adapter with replies streamed into an AI card of the configured template
 * (`ALMANAC_DINGTALK_CARD_TEMPLATE_ID`). A separate class, so that the server's `canStreamReplies` sees
 * `startReplyStream` only when streaming can work: without a template every reply is sent whole.
 */
export class DingTalkCardAdapter extends DingTalkAdapter implements StreamingReplyAdapter {
  private readonly cards: CardApi;

  constructor(
    settings: DingTalkAdapterSettings & { readonly cardTemplateId: string },
    options: DingTalkAdapterOptions = {},
  ) {
    super(settings, options);
    this.cards = new CardApi({
      client: this.openApiClient,
      robotCode: this.config.robotCode,
      cardTemplateId: settings.cardTemplateId,
    });
  }

  /**
   * Starts a reply shown in an AI card as it is written (created on the first update). A user DingTalk gave no
   * staff id cannot get a card: that reply is sent whole at `finish`.
   * @throws DingTalkError `dingtalk.target_invalid` when the session key is not this adapter's
   */
  startReplyStream(message: OutboundMessage): ReplyStream {
    const plan = toDeliveryPlan(message, this.config.account);
    return new CardReplyStream({
      cards: this.cards,
      target: cardTargetOf(plan.target),
      contentLimit: DINGTALK_MARKDOWN_LIMIT,
      clock: this.config.clock,
      logger: this.config.logger,
      sendPlain: (text) =>
        this.send({
          sessionKey: message.sessionKey,
          text,
          ...(message.inReplyTo === undefined ? {} : { inReplyTo: message.inReplyTo }),
        }),
    });
  }
}

function cardTargetOf(target: DeliveryPlan["target"]): CardTarget | undefined {
  if (target.kind === "group") return target;
  return target.staffId === undefined ? undefined : { kind: "dm", staffId: target.staffId };
}

/** DingTalk's `fileType` of a file message: the name's extension (`pdf`), or `file` when it has none. */
function fileTypeOf(name: string): string {
  const match = /\.([A-Za-z0-9]{1,10})$/.exec(name);
  return match?.[1]?.toLowerCase() ?? "file";
}

/**
 * Creates the DingTalk adapter from validated settings: a {@link DingTalkCardAdapter} when a card template is
 * configured, else a {@link DingTalkAdapter}. Nothing connects until `start`.
 * @throws DingTalkError `dingtalk.config_invalid` when the keep-alive options contradict each other.
 */
export function createDingTalkAdapter(
  settings: DingTalkAdapterSettings,
  options: DingTalkAdapterOptions = {},
): DingTalkAdapter {
  const { cardTemplateId } = settings;
  return cardTemplateId === undefined
    ? new DingTalkAdapter(settings, options)
    : new DingTalkCardAdapter({ ...settings, cardTemplateId }, options);
}
