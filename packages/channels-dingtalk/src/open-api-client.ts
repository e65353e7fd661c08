import type { AccessTokenCache } from "./access-token.js";
import { DingTalkError } from "./errors.js";
import { describeErrorBody, type JsonResponse, requestJson } from "./http-json.js";

/** Settings of {@link OpenApiClient}. */
export interface OpenApiClientSettings {
  readonly apiBaseUrl: string;
  readonly tokens: AccessTokenCache;
  readonly timeoutMs: number;
}

/**
 * DingTalk's new OpenAPI (`api.dingtalk.com/v1.0/…`) with the app's access token in `x-acs-dingtalk-access-token`:
 * robot messages, message files and cards all go through {@link OpenApiClient.call}, so a token DingTalk calls
 * invalid is replaced, and an error reads the same, in one place.
 */
export class OpenApiClient {
  private readonly settings: OpenApiClientSettings;

  constructor(settings: OpenApiClientSettings) {
    this.settings = settings;
  }

  /** The base URL requests go to (DingTalk's, or a fake's in tests). */
  get baseUrl(): string {
    return this.settings.apiBaseUrl;
  }

  /**
   * Sends `body` to `path` with the access token; a token DingTalk calls invalid (401) is replaced once.
   * @returns the answer's JSON body, unvalidated
   * @throws DingTalkError `dingtalk.rate_limited`, `dingtalk.send_failed` (DingTalk's words), `dingtalk.network`
   */
  async call(
    method: "POST" | "PUT",
    path: string,
    body: unknown,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<unknown> {
    for (let attempt = 0; ; attempt += 1) {
      const token = await this.settings.tokens.get();
      const response = await requestJson(method, `${this.settings.apiBaseUrl}${path}`, body, {
        headers: { "x-acs-dingtalk-access-token": token },
        timeoutMs: this.settings.timeoutMs,
        what: path,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
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

/** The error for an HTTP answer other than 200, with DingTalk's code and words. */
export function httpFailure(what: string, response: JsonResponse): DingTalkError {
  const { code, message } = describeErrorBody(response.body);
  const said = `HTTP ${response.status}${code === undefined ? "" : ` ${code}`}: ${message}`;
  const options = { status: response.status, ...(code === undefined ? {} : { platformCode: code }) };
  // DingTalk's QPS limits: HTTP 403 with Forbidden.AccessDenied.QpsLimitForApi (or …ForAppkeyAndApi); 429 in general.
  if (response.status === 429 || (code?.includes("QpsLimit") ?? false)) {
    return new DingTalkError("dingtalk.rate_limited", `DingTalk throttled ${what} (${said}).`, options);
  }
  const hint = code?.includes("PermissionDenied") ? `; ${permissionHint(what)}` : "";
  return new DingTalkError("dingtalk.send_failed", `DingTalk ${what} failed (${said})${hint}.`, options);
}

/** Which permission an API needs, for the message of a `PermissionDenied` answer. */
function permissionHint(what: string): string {
  const permission = what.startsWith("/v1.0/card/")
    ? "the card permissions (Card.Instance.Write, Card.Streaming.Write)"
    : "the robot message permission (qyapi_robot_sendmsg)";
  return `grant the app ${permission} and publish a new version`;
}
