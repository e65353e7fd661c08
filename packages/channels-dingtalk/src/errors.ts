import { AlmanacError, type ErrorCategory } from "@almanac/core";

/** Every code a {@link DingTalkError} can carry, with the side the failure belongs to. */
export const dingTalkErrorCategories = {
  /** The adapter config is unusable (the message names the key). */
  "dingtalk.config_invalid": "user",
  /** DingTalk rejected the clientId/clientSecret (connections/open or accessToken). */
  "dingtalk.auth_failed": "user",
  /** A reply has nowhere to go: not a DingTalk session key, another account, or a user without a staff id. */
  "dingtalk.target_invalid": "user",
  /** DingTalk throttled us (QPS limit or "send too fast"); retried with a delay before this surfaces. */
  "dingtalk.rate_limited": "provider",
  /** The sessionWebhook is gone (`300001`); the sender falls back to the OpenAPI. */
  "dingtalk.session_expired": "provider",
  /** connections/open failed for a reason other than credentials (network, 5xx, bad answer). */
  "dingtalk.gateway_unavailable": "provider",
  /** DingTalk refused a message (errcode / error body); the message carries DingTalk's words. */
  "dingtalk.send_failed": "provider",
  /** A file to send is larger than DingTalk's media upload takes for its type (the message names the limit). */
  "dingtalk.upload_too_large": "user",
  /** A received file could not be fetched: DingTalk refused its download code, or its URL failed or was not https. */
  "dingtalk.download_failed": "provider",
  /** The request did not get an HTTP answer (connection refused, timeout). */
  "dingtalk.network": "provider",
  /** DingTalk answered something we cannot read. */
  "dingtalk.bad_response": "provider",
  /** The adapter was used out of order (started twice, started after stop). */
  "dingtalk.lifecycle": "internal",
} as const satisfies Record<string, ErrorCategory>;

/** A stable code of a {@link DingTalkError}. */
export type DingTalkErrorCode = keyof typeof dingTalkErrorCategories;

/** Options of a {@link DingTalkError}. */
export interface DingTalkErrorOptions {
  readonly cause?: unknown;
  /** HTTP status of DingTalk's answer, when there was one. */
  readonly status?: number;
  /** DingTalk's own code: `errcode` of a webhook answer or `code` of an OpenAPI error body. */
  readonly platformCode?: string;
  /** Overrides the default (true for rate limits, network failures and 5xx answers). */
  readonly retryable?: boolean;
}

const retryableByDefault: ReadonlySet<DingTalkErrorCode> = new Set<DingTalkErrorCode>([
  "dingtalk.rate_limited",
  "dingtalk.gateway_unavailable",
  "dingtalk.network",
]);

/**
 * Base error of the DingTalk adapter. The category follows from the code, so callers can branch on `code`;
 * messages carry DingTalk's answer but never the client secret or an access token.
 */
export class DingTalkError extends AlmanacError {
  declare readonly code: DingTalkErrorCode;
  readonly status: number | undefined;
  readonly platformCode: string | undefined;
  readonly isRetryable: boolean;

  constructor(code: DingTalkErrorCode, message: string, options: DingTalkErrorOptions = {}) {
    super(
      dingTalkErrorCategories[code],
      code,
      message,
      options.cause === undefined ? {} : { cause: options.cause },
    );
    this.status = options.status;
    this.platformCode = options.platformCode;
    this.isRetryable =
      options.retryable ??
      (retryableByDefault.has(code) || (options.status !== undefined && options.status >= 500));
  }
}

/** Type guard for a {@link DingTalkError}, optionally of one code. */
export function isDingTalkError(error: unknown, code?: DingTalkErrorCode): error is DingTalkError {
  return error instanceof DingTalkError && (code === undefined || error.code === code);
}
