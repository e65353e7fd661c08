import type { Logger } from "@almanac/core";
import { DingTalkError, isDingTalkError } from "./errors.js";
import { markdownBody, postToSessionWebhook, type RobotMessageBody, type RobotOpenApi } from "./robot-api.js";
import type { DeliveryPlan, DingTalkClock, MarkdownMessage } from "./types.js";

/** Settings of {@link RobotSender}. */
export interface RobotSenderSettings {
  readonly openApi: RobotOpenApi;
  readonly clock: DingTalkClock;
  readonly logger: Logger;
  readonly throttleRetries: number;
  readonly throttleRetryDelayMs: number;
  readonly requestTimeoutMs: number;
}

/** A sessionWebhook this close to its expiry is not used (the request may arrive after it). */
export const WEBHOOK_EXPIRY_MARGIN_MS = 5_000;

/**
 * Sends markdown messages along a {@link DeliveryPlan}: through the sessionWebhook while it lives, else (or once
 * DingTalk says it is gone) through the robot OpenAPI. Throttled sends wait and retry.
 */
export class RobotSender {
  private readonly settings: RobotSenderSettings;

  constructor(settings: RobotSenderSettings) {
    this.settings = settings;
  }

  /** Sends the messages in order; stops at the first failure (earlier parts stay posted). */
  async send(plan: DeliveryPlan, messages: readonly MarkdownMessage[]): Promise<void> {
    let webhook = plan.webhook;
    for (const [index, message] of messages.entries()) {
      try {
        if (
          webhook !== undefined &&
          webhook.expiresAt - WEBHOOK_EXPIRY_MARGIN_MS > this.settings.clock.now()
        ) {
          const url = webhook.url;
          try {
            await this.withThrottleRetry(() =>
              postToSessionWebhook(url, message, this.settings.requestTimeoutMs),
            );
            continue;
          } catch (error) {
            if (!isDingTalkError(error, "dingtalk.session_expired")) throw error;
            this.settings.logger.info(
              { error: error.message },
              "DingTalk sessionWebhook gone; using the OpenAPI",
            );
            webhook = undefined;
          }
        }
        await this.withThrottleRetry(() => this.sendViaOpenApi(plan.target, markdownBody(message)));
      } catch (error) {
        if (messages.length > 1 && isDingTalkError(error)) {
          this.settings.logger.warn(
            { part: index + 1, parts: messages.length, code: error.code },
            "DingTalk reply failed part-way",
          );
        }
        throw error;
      }
    }
  }

  /**
   * Sends one robot message of any template (an image, a file) through the OpenAPI, retrying when throttled: the
   * sessionWebhook takes only text-like messages.
   */
  async sendThroughOpenApi(target: DeliveryPlan["target"], message: RobotMessageBody): Promise<void> {
    await this.withThrottleRetry(() => this.sendViaOpenApi(target, message));
  }

  private async sendViaOpenApi(target: DeliveryPlan["target"], message: RobotMessageBody): Promise<void> {
    if (target.kind === "group") {
      await this.settings.openApi.sendToGroup(target.openConversationId, message);
      return;
    }
    if (target.staffId === undefined) {
      throw new DingTalkError(
        "dingtalk.target_invalid",
        "Cannot message this DingTalk user through the OpenAPI: DingTalk gave no staff id (external user?) and the sessionWebhook has expired.",
      );
    }
    await this.settings.openApi.sendToUser(target.staffId, message);
  }

  /** Runs `send`; on `dingtalk.rate_limited` waits `delay × attempt` and tries again, up to the retry budget. */
  private async withThrottleRetry(send: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await send();
        return;
      } catch (error) {
        if (!isDingTalkError(error, "dingtalk.rate_limited") || attempt > this.settings.throttleRetries)
          throw error;
        const delayMs = this.settings.throttleRetryDelayMs * attempt;
        this.settings.logger.warn(
          { attempt, delayMs, error: error.message },
          "DingTalk throttled a send; retrying",
        );
        await this.settings.clock.sleep(delayMs);
      }
    }
  }
}
