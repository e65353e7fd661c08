import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { sendJson } from "../http-io.js";
import type { FakeRecords } from "./fake-records.js";
import type { RobotConversation } from "./robot-payload.js";
import { MSG_PARAM_BYTE_LIMIT, type SentMessage, type ThrottledRoute } from "./types.js";

/** Options of {@link createRobotHttp}. */
export interface RobotHttpOptions {
  readonly records: FakeRecords;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly robotCode: string;
  readonly accessTokenTtlSeconds: number;
  readonly markdownLimit: number;
  /** True for a `media_id` the fake's media upload issued (image and file messages must name one). */
  readonly mediaExists: (mediaId: string) => boolean;
}

/** The OpenAPI routes that share the robot's token check and throttling. */
export type OpenApiRoute = "openapi" | "card" | "messageFiles";

/** The robot's HTTP surface: access tokens, sessionWebhooks and the robot OpenAPI. */
export interface RobotHttp {
  /** Registers a sessionWebhook and returns its session token. */
  openSession(conversation: RobotConversation, expiresAt: number, revoked: boolean): string;
  rateLimitNext(route: ThrottledRoute, times: number): void;
  expireAccessTokens(): void;
  tokensIssued(): number;
  /** True for an access token the fake issued that has not expired. */
  validToken(token: unknown): boolean;
  /**
   * Checks `x-acs-dingtalk-access-token` (401 `InvalidAuthentication`) and the route's throttle (403 QPS limit);
   * when either fails, answers the request, records the rejection and returns false.
   */
  authorize(request: IncomingMessage, response: ServerResponse, route: OpenApiRoute): boolean;
  /** Answers an OpenAPI error the way DingTalk does, recording the rejection. */
  reject(response: ServerResponse, route: OpenApiRoute, status: number, code: string, message: string): void;
  /** Answers the request when the path is one of the robot routes; false otherwise. */
  handle(request: IncomingMessage, response: ServerResponse, url: URL, body: unknown): boolean;
}

type Content =
  | { msgtype: "markdown"; title: string; text: string }
  | { msgtype: "text"; text: string }
  | { msgtype: "image"; text: ""; mediaId: string }
  | { msgtype: "file"; text: ""; mediaId: string; fileName: string; fileType: string };

const webhookBodySchema = z.discriminatedUnion("msgtype", [
  z.object({
    msgtype: z.literal("markdown"),
    markdown: z.object({ title: z.string().min(1), text: z.string() }),
  }),
  z.object({ msgtype: z.literal("text"), text: z.object({ content: z.string() }) }),
]);
const tokenBodySchema = z.object({ appKey: z.string(), appSecret: z.string() });
const messageFields = { robotCode: z.string(), msgKey: z.string(), msgParam: z.string() };
const batchSendSchema = z.object({ ...messageFields, userIds: z.array(z.string().min(1)).min(1).max(20) });
const groupSendSchema = z.object({ ...messageFields, openConversationId: z.string().min(1) });
const markdownParamSchema = z.object({ title: z.string().min(1), text: z.string() });
const textParamSchema = z.object({ content: z.string() });
const imageParamSchema = z.object({ photoURL: z.string().min(1) });
const fileParamSchema = z.object({
  mediaId: z.string().min(1),
  fileName: z.string().min(1),
  fileType: z.string().min(1),
});

// DingTalk's answers. `300001`, `130101`, `authFailed`, `invalidClientIdOrSecret`, `InvalidAuthentication` and
// `Forbidden.AccessDenied.QpsLimitForApi` are what DingTalk returns; `40035`/`InvalidParameter` for a bad or
// oversize body is the fake's own choice (DingTalk does not document one for size).
const SESSION_GONE = { errcode: 300001, errmsg: "session 不存在" };
const WEBHOOK_THROTTLED = { errcode: 130101, errmsg: "send too fast, exceed 20 times per minute" };
const WEBHOOK_INVALID = 40035;

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Creates the robot HTTP handlers. */
export function createRobotHttp(options: RobotHttpOptions): RobotHttp {
  const { records } = options;
  const tokens = new Map<string, number>();
  const sessions = new Map<
    string,
    { conversation: RobotConversation; expiresAt: number; revoked: boolean }
  >();
  const throttles: Record<ThrottledRoute, number> = { sessionWebhook: 0, openapi: 0, card: 0, any: 0 };
  let issued = 0;
  let nextSession = 0;

  const throttled = (route: Exclude<ThrottledRoute, "any">): boolean => {
    if (throttles[route] > 0) {
      throttles[route] -= 1;
      return true;
    }
    if (throttles.any > 0) {
      throttles.any -= 1;
      return true;
    }
    return false;
  };

  const openApiError = (
    response: ServerResponse,
    route: "accessToken" | OpenApiRoute,
    status: number,
    code: string,
    message: string,
  ) => {
    records.addRejection({ route, status, code, message });
    sendJson(response, status, { requestid: randomUUID(), code, message });
  };

  const webhookError = (response: ServerResponse, body: { errcode: number; errmsg: string }) => {
    records.addRejection({
      route: "sessionWebhook",
      status: 200,
      code: String(body.errcode),
      message: body.errmsg,
    });
    sendJson(response, 200, body);
  };

  const validToken = (token: unknown): boolean => {
    const expiresAt = typeof token === "string" ? tokens.get(token) : undefined;
    return expiresAt !== undefined && expiresAt > Date.now();
  };

  function authorize(request: IncomingMessage, response: ServerResponse, route: OpenApiRoute): boolean {
    if (!validToken(request.headers["x-acs-dingtalk-access-token"])) {
      openApiError(response, route, 401, "InvalidAuthentication", "不合法的access_token");
      return false;
    }
    if (route !== "messageFiles" && throttled(route)) {
      openApiError(response, route, 403, "Forbidden.AccessDenied.QpsLimitForApi", "请求过于频繁，请稍后重试");
      return false;
    }
    return true;
  }

  const tooLong = (content: Content): string | undefined =>
    content.text.length > options.markdownLimit
      ? `${content.msgtype} text has ${content.text.length} characters; the limit is ${options.markdownLimit}`
      : undefined;

  function handleToken(response: ServerResponse, body: unknown): void {
    const parsed = tokenBodySchema.safeParse(body);
    if (
      !parsed.success ||
      parsed.data.appKey !== options.clientId ||
      parsed.data.appSecret !== options.clientSecret
    ) {
      openApiError(response, "accessToken", 400, "invalidClientIdOrSecret", "无效的clientId或者clientSecret");
      return;
    }
    const accessToken = `at-${randomUUID()}`;
    tokens.set(accessToken, Date.now() + options.accessTokenTtlSeconds * 1000);
    issued += 1;
    sendJson(response, 200, { accessToken, expireIn: options.accessTokenTtlSeconds });
  }

  function handleWebhook(response: ServerResponse, url: URL, body: unknown): void {
    const session = sessions.get(url.searchParams.get("session") ?? "");
    if (session === undefined || session.revoked || session.expiresAt <= Date.now()) {
      webhookError(response, SESSION_GONE);
      return;
    }
    if (throttled("sessionWebhook")) {
      webhookError(response, WEBHOOK_THROTTLED);
      return;
    }
    const parsed = webhookBodySchema.safeParse(body);
    if (!parsed.success) {
      webhookError(response, {
        errcode: WEBHOOK_INVALID,
        errmsg: `invalid message body: ${parsed.error.message}`,
      });
      return;
    }
    const content: Content =
      parsed.data.msgtype === "markdown"
        ? { msgtype: "markdown", title: parsed.data.markdown.title, text: parsed.data.markdown.text }
        : { msgtype: "text", text: parsed.data.text.content };
    const problem = tooLong(content);
    if (problem !== undefined) {
      webhookError(response, { errcode: WEBHOOK_INVALID, errmsg: problem });
      return;
    }
    const { conversation } = session;
    records.addSent({
      route: "sessionWebhook",
      conversationType: conversation.conversationType,
      conversationId: conversation.conversationId,
      ...content,
      body,
    });
    sendJson(response, 200, { errcode: 0, errmsg: "ok" });
  }

  function parseContent(msgKey: string, msgParam: string): Content | string {
    if (Buffer.byteLength(msgParam, "utf8") > MSG_PARAM_BYTE_LIMIT) {
      return `msgParam has ${Buffer.byteLength(msgParam, "utf8")} bytes; the limit is ${MSG_PARAM_BYTE_LIMIT}`;
    }
    const param = parseJson(msgParam);
    if (msgKey === "sampleMarkdown") {
      const parsed = markdownParamSchema.safeParse(param);
      return parsed.success
        ? { msgtype: "markdown", ...parsed.data }
        : "msgParam of sampleMarkdown needs {title, text}";
    }
    if (msgKey === "sampleText") {
      const parsed = textParamSchema.safeParse(param);
      return parsed.success
        ? { msgtype: "text", text: parsed.data.content }
        : "msgParam of sampleText needs {content}";
    }
    if (msgKey === "sampleImageMsg") {
      // photoURL takes a picture's URL or a media_id from media/upload; the fake knows only its own media ids.
      const parsed = imageParamSchema.safeParse(param);
      if (!parsed.success) return "msgParam of sampleImageMsg needs {photoURL}";
      if (!options.mediaExists(parsed.data.photoURL))
        return `photoURL ${parsed.data.photoURL} is no uploaded media`;
      return { msgtype: "image", text: "", mediaId: parsed.data.photoURL };
    }
    if (msgKey === "sampleFile") {
      const parsed = fileParamSchema.safeParse(param);
      if (!parsed.success) return "msgParam of sampleFile needs {mediaId, fileName, fileType}";
      if (!options.mediaExists(parsed.data.mediaId))
        return `mediaId ${parsed.data.mediaId} is no uploaded media`;
      return { msgtype: "file", text: "", ...parsed.data };
    }
    return `msgKey ${msgKey} is not supported by the fake`;
  }

  function handleOpenApi(
    request: IncomingMessage,
    response: ServerResponse,
    kind: "dm" | "group",
    body: unknown,
  ) {
    if (!authorize(request, response, "openapi")) return;
    const parsed = kind === "dm" ? batchSendSchema.safeParse(body) : groupSendSchema.safeParse(body);
    if (!parsed.success) {
      openApiError(
        response,
        "openapi",
        400,
        "InvalidParameter",
        `invalid request body: ${parsed.error.message}`,
      );
      return;
    }
    if (parsed.data.robotCode !== options.robotCode) {
      openApiError(
        response,
        "openapi",
        400,
        "InvalidParameter",
        `robot ${parsed.data.robotCode} does not exist`,
      );
      return;
    }
    const content = parseContent(parsed.data.msgKey, parsed.data.msgParam);
    const problem = typeof content === "string" ? content : tooLong(content);
    if (typeof content === "string" || problem !== undefined) {
      openApiError(response, "openapi", 400, "InvalidParameter", problem ?? String(content));
      return;
    }
    const target: Pick<SentMessage, "conversationType" | "conversationId" | "userIds"> =
      "userIds" in parsed.data
        ? { conversationType: "1", userIds: parsed.data.userIds }
        : { conversationType: "2", conversationId: parsed.data.openConversationId };
    records.addSent({ route: "openapi", ...target, ...content, body });
    const processQueryKey = randomUUID();
    sendJson(
      response,
      200,
      kind === "dm"
        ? { processQueryKey, invalidStaffIdList: [], flowControlledStaffIdList: [] }
        : { processQueryKey },
    );
  }

  return {
    openSession(conversation, expiresAt, revoked) {
      nextSession += 1;
      const session = `session-${nextSession}-${randomUUID().slice(0, 8)}`;
      sessions.set(session, { conversation, expiresAt, revoked });
      return session;
    },
    rateLimitNext(route, times) {
      throttles[route] += times;
    },
    expireAccessTokens() {
      tokens.clear();
    },
    tokensIssued: () => issued,
    validToken,
    authorize,
    reject: openApiError,
    handle(request, response, url, body) {
      if (request.method !== "POST") return false;
      switch (url.pathname) {
        case "/v1.0/oauth2/accessToken":
          handleToken(response, body);
          return true;
        case "/robot/sendBySession":
          handleWebhook(response, url, body);
          return true;
        case "/v1.0/robot/oToMessages/batchSend":
          handleOpenApi(request, response, "dm", body);
          return true;
        case "/v1.0/robot/groupMessages/send":
          handleOpenApi(request, response, "group", body);
          return true;
        default:
          return false;
      }
    },
  };
}
