import type { ChannelAdapter, ChannelStatus, InboundMessage, OutboundMessage } from "@almanac/core";
import { AccessTokenCache } from "./access-token.js";
import { resolveDingTalkConfig } from "./config.js";
import { DINGTALK_CHANNEL, toInboundMessage } from "./convert-inbound.js";
import { toDeliveryPlan, toMarkdownMessages } from "./convert-outbound.js";
import { DingTalkError } from "./errors.js";
import { RobotOpenApi } from "./robot-api.js";
import { parseRobotPayload } from "./robot-payload.js";
import { RobotSender } from "./robot-sender.js";
import { DingTalkStreamClient, type RobotFrame } from "./stream-client.js";
import type { DingTalkAdapterOptions, DingTalkAdapterSettings, ResolvedDingTalkConfig } from "./types.js";

/**
 * DingTalk in Stream mode: receives robot messages over `dingtalk-stream`'s WebSocket (acked on arrival),
 * replies through the message's sessionWebhook or the robot OpenAPI, reconnects on its own, and replaces a
 * connection that went silent (half-open) after `keepAliveTimeoutMs`.
 * Dedup, allowlists and mention gating are the server gate's job (`id`, `mentioned`, `conversation.kind` are set).
 */
export class DingTalkAdapter implements ChannelAdapter {
  readonly name = DINGTALK_CHANNEL;
  private readonly config: ResolvedDingTalkConfig;
  private readonly sender: RobotSender;
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
    this.sender = new RobotSender({
      openApi: new RobotOpenApi({
        apiBaseUrl,
        robotCode: this.config.robotCode,
        tokens,
        timeoutMs: requestTimeoutMs,
      }),
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
 * Creates a {@link DingTalkAdapter} from validated settings. Nothing connects until `start`.
 * @throws DingTalkError `dingtalk.config_invalid` when the keep-alive options contradict each other.
 */
export function createDingTalkAdapter(
  settings: DingTalkAdapterSettings,
  options: DingTalkAdapterOptions = {},
): DingTalkAdapter {
  return new DingTalkAdapter(settings, options);
}
