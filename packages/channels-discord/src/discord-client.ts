import {
  type Channel,
  Client,
  DiscordAPIError,
  DiscordjsError,
  DiscordjsErrorCodes,
  Events,
  GatewayIntentBits,
  Options,
  Partials,
  type RESTOptions,
  Routes,
} from "discord.js";
import { z } from "zod";
import type { FatalClose } from "./connection-status.js";
import { toDiscordApiError } from "./errors.js";
import type { DiscordLocation } from "./types.js";

/** `@discordjs/rest`'s request strategy over the global fetch (whose Response has every field REST reads). */
const fetchRequest = ((url: string, init: RequestInit) =>
  fetch(url, init)) as unknown as RESTOptions["makeRequest"];

/**
 * Creates the discord.js client the adapter drives: the four intents it needs, `Partials.Channel` (without
 * it discord.js drops DMs from uncached DM channels), no message/presence caches (the adapter reads raw
 * MESSAGE_CREATE payloads, so caching them would only grow memory in a long-running server).
 */
export function createDiscordClient(apiBaseUrl: string): Client {
  return new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.DirectMessages,
      GatewayIntentBits.MessageContent,
    ],
    partials: [Partials.Channel],
    // Requests go through the runtime's own fetch, not @discordjs/rest's default (the `undici` package's `request`):
    // that one hands the global FormData of an upload to whichever undici owns the process-wide dispatcher, and in a
    // server that also loads undici 7 the brand check fails ("action is not a function"). Fetch encodes the form
    // itself, with the FormData class it belongs to.
    rest: { api: apiBaseUrl, makeRequest: fetchRequest },
    makeCache: Options.cacheWithLimits({
      ...Options.DefaultMakeCacheSettings,
      MessageManager: 0,
      PresenceManager: 0,
      ReactionManager: 0,
    }),
    // Model output may name users but never pings @everyone, @here or roles.
    allowedMentions: { parse: ["users"], repliedUser: true },
    failIfNotExists: false,
  });
}

/** Resolves on the client's first ClientReady; `cancel` detaches the listener when login failed. */
export function waitForClientReady(client: Client): { promise: Promise<void>; cancel: () => void } {
  let cancel = (): void => {};
  const promise = new Promise<void>((resolve) => {
    const onReady = (): void => resolve();
    client.once(Events.ClientReady, onReady);
    cancel = () => client.off(Events.ClientReady, onReady);
  });
  return { promise, cancel };
}

/**
 * The fatal meaning of a failed `client.login`, or `undefined` when retrying may help (network, 5xx).
 * discord.js turns REST 401 on `GET /gateway/bot` into `TokenInvalid`; a gateway close 4004 arrives as
 * a shard disconnect the adapter records before login rejects.
 */
export function fatalLoginError(error: unknown): FatalClose | undefined {
  const tokenInvalid =
    (error instanceof DiscordjsError && error.code === DiscordjsErrorCodes.TokenInvalid) ||
    (error instanceof DiscordAPIError && error.status === 401);
  if (!tokenInvalid) return undefined;
  return {
    code: 401,
    errorCode: "discord.auth_failed",
    detail:
      "Discord rejected the bot token (HTTP 401 Unauthorized). " +
      "Reset the token under Bot in the developer portal and update the Discord token setting.",
  };
}

/** Where a message was said: a DM, a guild channel, or a thread (with its parent), from the cache or REST. */
export async function locateChannel(
  client: Client,
  channelId: string,
  guildId: string | undefined,
): Promise<DiscordLocation> {
  if (guildId === undefined) return { kind: "dm" };
  let channel: Channel | null | undefined = client.channels.cache.get(channelId);
  if (channel === undefined) channel = await client.channels.fetch(channelId).catch(() => null);
  if (channel === null || channel === undefined) return { kind: "group" };
  if (channel.isThread() && channel.parentId !== null) {
    return { kind: "thread", parentId: channel.parentId, name: channel.name };
  }
  return "name" in channel && typeof channel.name === "string"
    ? { kind: "group", name: channel.name }
    : { kind: "group" };
}

/** Ids of the bot's managed role(s) in a guild (`<@&id>` of these addresses the bot). */
export function botRoleIds(
  client: Client,
  guildId: string | undefined,
  botUserId: string,
): ReadonlySet<string> {
  if (guildId === undefined) return new Set();
  const roles = client.guilds.cache.get(guildId)?.roles.cache;
  if (roles === undefined) return new Set();
  return new Set(roles.filter((role) => role.tags?.botId === botUserId).map((role) => role.id));
}

const dmChannelSchema = z.object({ id: z.string().regex(/^\d+$/) });

/**
 * Opens (or finds) the DM channel with a user and returns its id.
 * @throws DiscordApiError `discord.send_failed` when Discord refuses or answers without an id.
 */
export async function openDmChannel(client: Client, userId: string): Promise<string> {
  let answer: unknown;
  try {
    answer = await client.rest.post(Routes.userChannels(), { body: { recipient_id: userId } });
  } catch (error) {
    throw toDiscordApiError("discord.send_failed", `Opening a DM with Discord user ${userId}`, error);
  }
  const parsed = dmChannelSchema.safeParse(answer);
  if (!parsed.success) {
    throw toDiscordApiError(
      "discord.send_failed",
      "Opening a DM",
      new Error("Discord answered without an id"),
    );
  }
  return parsed.data.id;
}
