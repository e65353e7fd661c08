import { z } from "zod";
import type { AccessTokenCache } from "./access-token.js";
import { DingTalkError } from "./errors.js";
import { describeErrorBody, type JsonResponse, postJson } from "./http-json.js";
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
  readonly apiBaseUrl: string;
  readonly robotCode: string;
  readonly tokens: AccessTokenCache;
  readonly timeoutMs: number;
}

/** The robot's OpenAPI: one-on-one and group messages sent with the app's access token. */
export class RobotOpenApi {
  private readonly settings: RobotOpenApiSettings;

  constructor(settings: RobotOpenApiSettings) {
    this.settings = settings;
  }

  /** Sends to one user's one-on-one chat with the robot (`oToMessages/batchSend`). */
  async sendToUser(staffId: string, message: MarkdownMessage): Promise<void> {
    const body = { robotCode: this.settings.robotCode, userIds: [staffId], ...markdownParam(message) };
    const answer = await this.call("/v1.0/robot/oToMessages/batchSend", body);
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
  async sendToGroup(openConversationId: string, message: MarkdownMessage): Promise<void> {
    const body = { robotCode: this.settings.robotCode, openConversationId, ...markdownParam(message) };
    await this.call("/v1.0/robot/groupMessages/send", body);
  }

  /** POSTs with the access token; a token DingTalk calls invalid is replaced once. */
  private async call(path: string, body: unknown): Promise<unknown> {
    for (let attempt = 0; ; attempt += 1) {
      const token = await this.settings.tokens.get();
      const response = await postJson(`${this.settings.apiBaseUrl}${path}`, body, {
        headers: { "x-acs-dingtalk-access-token": token },
        timeoutMs: this.settings.timeoutMs,
        what: path,
      });
      if (response.status === 200) return response.body;
      if (response.status === 401 && attempt === 0) {
        this.settings.tokens.invalidate(token);
        continue;
      }
      throw httpFailure(path, response);
    }
  }
}

function markdownParam(message: MarkdownMessage): { msgKey: string; msgParam: string } {
  return { msgKey: "sampleMarkdown", msgParam: JSON.stringify({ title: message.title, text: message.text }) };
}

function httpFailure(what: string, response: JsonResponse): DingTalkError {
  const { code, message } = describeErrorBody(response.body);
  const said = `HTTP ${response.status}${code === undefined ? "" : ` ${code}`}: ${message}`;
  const options = { status: response.status, ...(code === undefined ? {} : { platformCode: code }) };
  // DingTalk's QPS limits: HTTP 403 with Forbidden.AccessDenied.QpsLimitForApi (or …ForAppkeyAndApi); 429 in general.
  if (response.status === 429 || (code?.includes("QpsLimit") ?? false)) {
    return new DingTalkError("dingtalk.rate_limited", `DingTalk throttled ${what} (${said}).`, options);
  }
  const hint = code?.includes("PermissionDenied")
    ? "; grant the app the robot message permission (qyapi_robot_sendmsg) and publish a new version"
    : "";
  return new DingTalkError("dingtalk.send_failed", `DingTalk ${what} failed (${said})${hint}.`, options);
}
