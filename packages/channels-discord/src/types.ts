import type { Logger } from "@almanac/core";

/** Discord's default REST base URL (discord.js appends `/v10/...`). */
export const DEFAULT_DISCORD_API_BASE_URL = "https://discord.com/api";

/** Discord's limit on the `content` of one message, in characters. */
export const DISCORD_MESSAGE_LIMIT = 2000;

/** Configuration of {@link createDiscordAdapter}. Only `token` is required. */
export interface DiscordAdapterConfig {
  /** Bot token from the developer portal (Bot → Reset Token). Secret. */
  readonly token: string;
  /** Which bot this is, in session keys (`discord:{account}:...`); default `"default"`. */
  readonly account?: string;
  /**
   * REST base URL without the version; default {@link DEFAULT_DISCORD_API_BASE_URL}. Tests point it at
   * the fake (`http://127.0.0.1:PORT/api`); the gateway URL comes from `GET /gateway/bot` on it.
   */
  readonly apiBaseUrl?: string;
  readonly logger?: Logger;
  /** How often the typing indicator is renewed (Discord shows it ~10 s); default 8000 ms. */
  readonly typingIntervalMs?: number;
  /** First delay before retrying a login that failed for a passing reason (doubles up to 5 min); default 5000 ms. */
  readonly retryDelayMs?: number;
  /** Milliseconds since the epoch; default `Date.now`. Stamps `receivedAt` and `lastEventAt`. */
  readonly clock?: () => number;
}

/** Where a Discord message was said, resolved from the channel cache (or `GET /channels/:id`). */
export type DiscordLocation =
  | { readonly kind: "dm" }
  | { readonly kind: "group"; readonly name?: string }
  | { readonly kind: "thread"; readonly parentId: string; readonly name?: string };
