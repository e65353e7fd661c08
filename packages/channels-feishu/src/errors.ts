import { ProviderError } from "@almanac/core";
import type { FeishuApiErrorCode } from "./error-codes.js";

/** Options of {@link FeishuApiError}. */
export interface FeishuApiErrorOptions {
  readonly isRetryable: boolean;
  /** Feishu's numeric `code` (e.g. 230002 bot not in chat, 99991400 rate limited), when it sent one. */
  readonly platformCode?: number;
  /** HTTP status, when the call got an HTTP answer. */
  readonly status?: number;
  /** Wait Feishu asked for (`x-ogw-ratelimit-reset`), in milliseconds. */
  readonly retryAfterMs?: number;
  readonly cause?: unknown;
}

/**
 * A failed call to the Feishu open platform. `code` is one of `feishu.rate_limited`, `feishu.message_too_large`,
 * `feishu.auth_failed`, `feishu.network_error`, `feishu.invalid_response` or `feishu.api_error`;
 * the message quotes Feishu's own `msg`.
 */
export class FeishuApiError extends ProviderError {
  readonly platformCode: number | undefined;

  constructor(code: FeishuApiErrorCode, message: string, options: FeishuApiErrorOptions) {
    super(code, message, {
      isRetryable: options.isRetryable,
      ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
      ...(options.status === undefined ? {} : { status: options.status }),
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.platformCode = options.platformCode;
  }
}
