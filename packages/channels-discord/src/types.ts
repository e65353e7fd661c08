import type { Logger } from "@almanac/core";
import type { EnabledDiscordSettings } from "./descriptor.js";

/** Discord's limit on the `content` of one message, in characters. */
export const DISCORD_MESSAGE_LIMIT = 2000;

/**
 * The largest file the adapter uploads, in bytes: 10 MiB, Discord's limit for a bot in a guild without boosts and
 * in DMs (a boosted guild takes more, but the adapter cannot know which limit applies before Discord answers
 * 413, so it keeps to the one that holds everywhere).
 */
export const DISCORD_UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;

/** Timers the streamed reply paces its edits with; tests pass manual ones so the one-second pace needs no sleeping. */
export interface DiscordTimers {
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

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
  /** Milliseconds since the epoch; default `Date.now`. Stamps `receivedAt` and `lastEventAt`, paces streamed edits. */
  readonly clock?: () => number;
  /** Timers for the pace of streamed edits; default the global `setTimeout` / `clearTimeout`. */
  readonly timers?: DiscordTimers;
  /** Least time between two edits of a streamed reply in one conversation; default 1000 ms. */
  readonly streamEditIntervalMs?: number;
  /**
   * How long a streamed reply's first text is held before it is posted: a reply written within it is posted whole,
   * with no edit, and the first notification people get is not a fragment. Default 1000 ms; 0 posts at once.
   */
  readonly streamFirstPostDelayMs?: number;
  /** The HTTP client attachments are downloaded with; default the global `fetch`. */
  readonly fetch?: typeof fetch;
}

/** Where a Discord message was said, resolved from the channel cache (or `GET /channels/:id`). */
export type DiscordLocation =
  | { readonly kind: "dm" }
  | { readonly kind: "group"; readonly name?: string }
  | { readonly kind: "thread"; readonly parentId: string; readonly name?: string };
