import { ProviderError, type ProviderErrorOptions, UserError } from "@almanac/core";
import { DiscordAPIError, HTTPError } from "discord.js";

/** Codes of errors the Discord adapter throws. */
export type DiscordErrorCode =
  /** The adapter configuration is unusable (e.g. empty token). */
  | "discord.config_invalid"
  /** Discord refused the bot token (REST 401 or gateway close 4004). */
  | "discord.auth_failed"
  /** The gateway refused the connection for a reason retrying cannot fix (intents, sharding, version). */
  | "discord.gateway_refused"
  /** A session key or message does not belong to this adapter, or names no Discord conversation. */
  | "discord.target_invalid"
  /** `send`/`startTyping` before `start` or after `stop`. */
  | "discord.not_started"
  /** `start` called twice without `stop`. */
  | "discord.already_started"
  /** Connecting failed for a passing reason (network, Discord 5xx); the adapter retries. */
  | "discord.connect_failed"
  /** A REST call to post, edit or delete a message (or to upload a file) failed. */
  | "discord.send_failed"
  /** A file to send is larger than Discord takes from a bot. */
  | "discord.file_too_large"
  /** An attachment's URL is not on Discord's CDN: it is never fetched. */
  | "discord.download_refused"
  /** Downloading an attachment from Discord's CDN failed (status, network, cancelled). */
  | "discord.download_failed";

/** A failed call to Discord's API, with Discord's own numeric error code when it sent one. */
export class DiscordApiError extends ProviderError {
  /** Discord's JSON error code (e.g. 50035 "Invalid Form Body", 10003 "Unknown Channel"). */
  readonly discordCode: number | undefined;

  constructor(
    code: DiscordErrorCode,
    message: string,
    options: ProviderErrorOptions & { readonly discordCode?: number },
  ) {
    super(code, message, options);
    this.discordCode = options.discordCode;
  }
}

/** A configuration or usage error of the Discord adapter; the message says what to change. */
export function discordUserError(code: DiscordErrorCode, message: string, cause?: unknown): UserError {
  return new UserError(code, message, cause === undefined ? {} : { cause });
}

/**
 * Wraps whatever the REST client threw as a {@link DiscordApiError}: Discord's status and error code
 * when it answered, retryable for 429, 5xx and network failures.
 */
export function toDiscordApiError(code: DiscordErrorCode, action: string, error: unknown): DiscordApiError {
  if (error instanceof DiscordAPIError) {
    const discordCode = typeof error.code === "number" ? error.code : undefined;
    return new DiscordApiError(
      code,
      `${action}: Discord answered ${error.status} (${error.code}) ${error.message}`,
      {
        cause: error,
        status: error.status,
        isRetryable: error.status === 429 || error.status >= 500,
        ...(discordCode === undefined ? {} : { discordCode }),
      },
    );
  }
  if (error instanceof HTTPError) {
    return new DiscordApiError(code, `${action}: Discord answered HTTP ${error.status} ${error.message}`, {
      cause: error,
      status: error.status,
      isRetryable: error.status === 429 || error.status >= 500,
    });
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new DiscordApiError(code, `${action}: ${reason}`, { cause: error, isRetryable: true });
}
