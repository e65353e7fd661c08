import { z } from "zod";
import { DingTalkError } from "./errors.js";
import { postJson } from "./http-json.js";
import { httpFailure, type OpenApiClient } from "./open-api-client.js";
import type { MarkdownMessage } from "./types.js";

/** `errcode` of a sessionWebhook that expired or never existed ("session 不存在"). */
export const SESSION_GONE_ERRCODE = 300001;
/** `errcode` of a robot sending too fast ("send too fast, exceed 20 times per minute"). */
export const SEND_TOO_FAST_ERRCODE = 130101;

const webhookAnswerSchema = z.object({ errcode: z.number(), errmsg: z.string().optional() }).loose();
const batchSendAnswerSchema = z
  .object({
    processQueryKey: z.string().optional(),
    invalidStaffIdList: z.array(z.string()).optional(),
    flowControlledStaffIdList: z.array(z.string()).optional(),
  })
  .loose();

/**
 * Posts one markdown message to a sessionWebhook (no token needed while it lives).
 * @throws DingTalkError `dingtalk.session_expired` (`300001`), `dingtalk.rate_limited` (`130101`),
 * `dingtalk.send_failed` for any other errcode or HTTP error, `dingtalk.network`, `dingtalk.bad_response`.
 */
export async function postToSessionWebhook(
  url: string,
  message: MarkdownMessage,
  timeoutMs: number,
): Promise<void> {
  const response = await postJson(
    url,
    { msgtype: "markdown", markdown: { title: message.title, text: message.text } },
    { timeoutMs, what: "sessionWebhook" },
  );
  if (response.status !== 200) throw httpFailure("sessionWebhook", response);
  const parsed = webhookAnswerSchema.safeParse(response.body);
  if (!parsed.success)
    throw new DingTalkError("dingtalk.bad_response", "DingTalk sessionWebhook answer has no errcode.");
  const { errcode, errmsg = "" } = parsed.data;
  if (errcode === 0) return;
  const options = { status: response.status, platformCode: String(errcode) };
  if (errcode === SESSION_GONE_ERRCODE) {
    throw new DingTalkError(
      "dingtalk.session_expired",
      `DingTalk sessionWebhook is gone (${errcode} ${errmsg}).`,
      options,
    );
  }
  if (errcode === SEND_TOO_FAST_ERRCODE) {
    throw new DingTalkError(
      "dingtalk.rate_limited",
      `DingTalk throttled the sessionWebhook (${errcode} ${errmsg}).`,
      options,
    );
  }
  throw new DingTalkError(
    "dingtalk.send_failed",
    `DingTalk sessionWebhook refused the message (${errcode} ${errmsg}).`,
    options,
  );
}

/** Settings of {@link RobotOpenApi}. */
export interface RobotOpenApiSettings {
  readonly client: OpenApiClient;
  readonly robotCode: string;
}

/** A robot message of the OpenAPI: a message template (`msgKey`) and its parameters. */
export interface RobotMessageBody {
  /** `sampleMarkdown`, `sampleImageMsg`, `sampleFile`, … */
  readonly msgKey: string;
  readonly msgParam: Readonly<Record<string, unknown>>;
}

const downloadAnswerSchema = z.object({ downloadUrl: z.string().min(1) }).loose();

/** The robot's OpenAPI: one-on-one and group messages sent with the app's access token, and message files. */
export class RobotOpenApi {
  private readonly settings: RobotOpenApiSettings;

  constructor(settings: RobotOpenApiSettings) {
    this.settings = settings;
  }

  /** Sends to one user's one-on-one chat with the robot (`oToMessages/batchSend`). */
  async sendToUser(staffId: string, message: RobotMessageBody): Promise<void> {
    const body = { robotCode: this.settings.robotCode, userIds: [staffId], ...wireBody(message) };
    const answer = await this.settings.client.call("POST", "/v1.0/robot/oToMessages/batchSend", body);
    const parsed = batchSendAnswerSchema.safeParse(answer);
    if (!parsed.success)
      throw new DingTalkError("dingtalk.bad_response", "DingTalk batchSend answer is not an object.");
    if (parsed.data.flowControlledStaffIdList?.includes(staffId) === true) {
      throw new DingTalkError("dingtalk.rate_limited", `DingTalk flow-controlled the message to ${staffId}.`);
    }
    if (parsed.data.invalidStaffIdList?.includes(staffId) === true) {
      throw new DingTalkError("dingtalk.send_failed", `DingTalk says ${staffId} is not a valid staff id.`, {
        retryable: false,
      });
    }
  }

  /** Sends to a group the robot is in (`groupMessages/send`). */
  async sendToGroup(openConversationId: string, message: RobotMessageBody): Promise<void> {
    const body = { robotCode: this.settings.robotCode, openConversationId, ...wireBody(message) };
    await this.settings.client.call("POST", "/v1.0/robot/groupMessages/send", body);
  }

  /**
   * Exchanges the download code of a received picture, file, voice or video message for a short-lived URL
   * (`messageFiles/download`).
   * @throws DingTalkError `dingtalk.bad_response` when the answer has no `downloadUrl`, or what the call throws
   */
  async downloadUrl(downloadCode: string, signal?: AbortSignal): Promise<string> {
    const body = { downloadCode, robotCode: this.settings.robotCode };
    const answer = await this.settings.client.call(
      "POST",
      "/v1.0/robot/messageFiles/download",
      body,
      signal === undefined ? {} : { signal },
    );
    const parsed = downloadAnswerSchema.safeParse(answer);
    if (!parsed.success)
      throw new DingTalkError(
        "dingtalk.bad_response",
        "DingTalk messageFiles/download answer has no downloadUrl.",
      );
    return parsed.data.downloadUrl;
  }
}

/** A markdown message as the OpenAPI's `sampleMarkdown` template. */
export function markdownBody(message: MarkdownMessage): RobotMessageBody {
  return { msgKey: "sampleMarkdown", msgParam: { title: message.title, text: message.text } };
}

/** The OpenAPI wants `msgParam` as JSON text. */
function wireBody(message: RobotMessageBody): { msgKey: string; msgParam: string } {
  return { msgKey: message.msgKey, msgParam: JSON.stringify(message.msgParam) };
}
