import type { Logger } from "@almanac/core";
import type { EnabledDiscordSettings } from "./descriptor.js";

/** Discord's limit on the `content` of one message, in characters. */
export const DISCORD_MESSAGE_LIMIT = 2000;

/**
 * What the adapter reads of the validated `channels.discord` block: the bot token (from the developer portal,
 * Bot → Reset Token; secret) and the REST base URL without the version (tests point it at the fake,
 * `http://127.0.0.1:PORT/api`; the gateway URL comes from `GET /gateway/bot` on it).
 */
export type DiscordAdapterSettings = Pick<EnabledDiscordSettings, "token" | "apiBaseUrl">;

/** Run-time options of {@link createDiscordAdapter}; all have defaults. */
export interface DiscordAdapterOptions {
  /** Which bot this is, in session keys (`discord:{account}:...`); default `"default"`. */
  readonly account?: string;
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
