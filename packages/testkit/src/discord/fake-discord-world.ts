import type { FakeActionRow } from "./fake-discord-schemas.js";

/**
 * The fixed little world the fake Discord serves: one guild with a text channel, a thread under it,
 * the bot's managed role, a human user with an open DM, and a second bot. Payload builders produce
 * objects shaped like Discord API v10's, so the real discord.js client accepts them.
 */

/** Discord's epoch (2015-01-01), the origin of snowflake timestamps. */
const DISCORD_EPOCH = 1_420_070_400_000n;

/** The default bot token of the fake; REST and IDENTIFY with any other token are refused. */
export const FAKE_DISCORD_TOKEN = "MTYwMDAwMDAwMDAwMDAwMDAwMQ.GfAkEx.fake-discord-bot-token-0123456789";

/** A user of the fake world, as tests refer to it. */
export interface FakeDiscordUser {
  readonly id: string;
  readonly username: string;
  /** Display name (`global_name`); Discord falls back to `username` when absent. */
  readonly globalName?: string;
  readonly bot?: boolean;
}

/** Ids of everything in the fake world. */
export interface FakeDiscordIds {
  readonly bot: string;
  readonly application: string;
  readonly guild: string;
  /** A text channel (`#general`) in the guild. */
  readonly channel: string;
  /** A public thread whose parent is {@link FakeDiscordIds.channel}. */
  readonly thread: string;
  /** The bot's managed role in the guild (`tags.bot_id` = bot id). */
  readonly botRole: string;
  /** The DM channel between the bot and {@link FakeDiscordWorld.user}. */
  readonly dmChannel: string;
}

/** The world's ids and users. */
export interface FakeDiscordWorld {
  readonly ids: FakeDiscordIds;
  readonly botUser: FakeDiscordUser;
  /** The default human author of dispatched messages. */
  readonly user: FakeDiscordUser;
  /** Another bot in the guild; the adapter must ignore its messages. */
  readonly otherBot: FakeDiscordUser;
}

/** The fake's default world. */
export function createFakeDiscordWorld(): FakeDiscordWorld {
  const ids: FakeDiscordIds = {
    bot: "1100000000000000001",
    application: "1100000000000000001",
    guild: "1200000000000000002",
    channel: "1300000000000000003",
    thread: "1300000000000000004",
    botRole: "1400000000000000005",
    dmChannel: "1500000000000000006",
  };
  return {
    ids,
    botUser: { id: ids.bot, username: "almanac-bot", bot: true },
    user: { id: "1600000000000000007", username: "alice", globalName: "Alice Liddell" },
    otherBot: { id: "1600000000000000008", username: "other-bot", bot: true },
  };
}

/** Makes snowflake ids that encode the creation time, like Discord's, and never repeat. */
export function createSnowflakeGenerator(now: () => number = Date.now): () => string {
  let increment = 0n;
  return () => {
    increment = (increment + 1n) & 0xfffn;
    const time = BigInt(now()) - DISCORD_EPOCH;
    return ((time << 22n) | (1n << 17n) | increment).toString();
  };
}

/** A Discord user object. */
export function userPayload(user: FakeDiscordUser): Record<string, unknown> {
  return {
    id: user.id,
    username: user.username,
    discriminator: "0",
    global_name: user.globalName ?? null,
    avatar: null,
    ...(user.bot ? { bot: true } : {}),
  };
}

/** A guild member object (without `user`, as attached to messages). */
export function memberPayload(roles: readonly string[] = [], nick?: string): Record<string, unknown> {
  return {
    roles: [...roles],
    nick: nick ?? null,
    joined_at: new Date(0).toISOString(),
    deaf: false,
    mute: false,
    flags: 0,
  };
}

/** What a channel is, for lookups by id (`GET /channels/:id`, posting, threads). */
export type FakeChannel =
  | { readonly type: "text"; readonly id: string; readonly name: string }
  | { readonly type: "thread"; readonly id: string; readonly name: string; readonly parentId: string }
  | { readonly type: "dm"; readonly id: string; readonly recipient: FakeDiscordUser };

/** The Discord channel object of a fake channel. */
export function channelPayload(channel: FakeChannel, world: FakeDiscordWorld): Record<string, unknown> {
  switch (channel.type) {
    case "text":
      return {
        id: channel.id,
        type: 0,
        guild_id: world.ids.guild,
        name: channel.name,
        position: 0,
        permission_overwrites: [],
        parent_id: null,
        nsfw: false,
        topic: null,
        last_message_id: null,
        rate_limit_per_user: 0,
      };
    case "thread":
      return {
        id: channel.id,
        type: 11,
        guild_id: world.ids.guild,
        name: channel.name,
        parent_id: channel.parentId,
        owner_id: world.user.id,
        last_message_id: null,
        rate_limit_per_user: 0,
        message_count: 0,
        member_count: 1,
        thread_metadata: {
          archived: false,
          auto_archive_duration: 1440,
          archive_timestamp: new Date(0).toISOString(),
          locked: false,
        },
        total_message_sent: 0,
      };
    case "dm":
      return { id: channel.id, type: 1, last_message_id: null, recipients: [userPayload(channel.recipient)] };
  }
}

/** The READY dispatch payload for a new session. */
export function readyPayload(
  world: FakeDiscordWorld,
  sessionId: string,
  resumeGatewayUrl: string,
): Record<string, unknown> {
  return {
    v: 10,
    user: { ...userPayload(world.botUser), verified: true, mfa_enabled: false, flags: 0 },
    guilds: [{ id: world.ids.guild, unavailable: true }],
    session_id: sessionId,
    resume_gateway_url: resumeGatewayUrl,
    shard: [0, 1],
    application: { id: world.ids.application, flags: 0 },
    private_channels: [],
    relationships: [],
    presences: [],
    guild_join_requests: [],
    user_settings: {},
  };
}

/** The GUILD_CREATE dispatch payload: channels, active threads, roles and the bot's own member. */
export function guildCreatePayload(
  world: FakeDiscordWorld,
  channels: readonly FakeChannel[],
): Record<string, unknown> {
  const { ids } = world;
  const role = (id: string, name: string, extra: Record<string, unknown>) => ({
    id,
    name,
    permissions: "68608",
    position: 0,
    color: 0,
    hoist: false,
    managed: false,
    mentionable: false,
    icon: null,
    unicode_emoji: null,
    flags: 0,
    ...extra,
  });
  return {
    id: ids.guild,
    name: "Fake Guild",
    icon: null,
    owner_id: world.user.id,
    unavailable: false,
    member_count: 3,
    large: false,
    joined_at: new Date(0).toISOString(),
    features: [],
    emojis: [],
    stickers: [],
    presences: [],
    voice_states: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
    roles: [
      role(ids.guild, "@everyone", {}),
      role(ids.botRole, world.botUser.username, { managed: true, position: 1, tags: { bot_id: ids.bot } }),
    ],
    members: [{ user: userPayload(world.botUser), ...memberPayload([ids.botRole]) }],
    channels: channels
      .filter((channel) => channel.type === "text")
      .map((channel) => channelPayload(channel, world)),
    threads: channels
      .filter((channel) => channel.type === "thread")
      .map((channel) => channelPayload(channel, world)),
  };
}

/** Fields of a message object the fake fills in. */
export interface MessageFields {
  readonly id: string;
  readonly channel: FakeChannel;
  readonly author: FakeDiscordUser;
  readonly content: string;
  readonly guildId?: string;
  readonly authorRoles?: readonly string[];
  readonly mentions?: readonly FakeDiscordUser[];
  readonly mentionRoles?: readonly string[];
  readonly attachments?: readonly Record<string, unknown>[];
  /** The message this one replies to (its full object, as Discord embeds it in `referenced_message`). */
  readonly replyTo?: Record<string, unknown>;
  readonly nonce?: string | number;
  /** Message flags; IS_VOICE_MESSAGE is 1 << 13. Default 0. */
  readonly flags?: number;
  /** Action rows of buttons under the message (a bot's message only). */
  readonly components?: readonly FakeActionRow[];
}

/** A full Discord message object, as REST returns it and MESSAGE_CREATE carries it. */
export function messagePayload(fields: MessageFields): Record<string, unknown> {
  const guildId = fields.channel.type === "dm" ? undefined : fields.guildId;
  const reference = fields.replyTo;
  return {
    id: fields.id,
    channel_id: fields.channel.id,
    ...(guildId === undefined ? {} : { guild_id: guildId, member: memberPayload(fields.authorRoles) }),
    author: userPayload(fields.author),
    content: fields.content,
    timestamp: new Date().toISOString(),
    edited_timestamp: null,
    tts: false,
    mention_everyone: false,
    mentions: (fields.mentions ?? []).map((user) => ({
      ...userPayload(user),
      ...(guildId === undefined ? {} : { member: memberPayload() }),
    })),
    mention_roles: [...(fields.mentionRoles ?? [])],
    attachments: [...(fields.attachments ?? [])],
    embeds: [],
    pinned: false,
    type: reference === undefined ? 0 : 19,
    flags: fields.flags ?? 0,
    components: withComponentIds(fields.components ?? []),
    ...(fields.nonce === undefined ? {} : { nonce: fields.nonce }),
    ...(reference === undefined
      ? {}
      : {
          message_reference: {
            type: 0,
            message_id: reference.id,
            channel_id: fields.channel.id,
            ...(guildId === undefined ? {} : { guild_id: guildId }),
          },
          referenced_message: reference,
        }),
  };
}

/** Components as Discord stores them: every row and button numbered in order (`id`), starting at 1. */
export function withComponentIds(rows: readonly FakeActionRow[]): FakeActionRow[] {
  let next = 0;
  return rows.map((row) => {
    next += 1;
    const rowId = row.id ?? next;
    return {
      ...row,
      id: rowId,
      components: row.components.map((button) => {
        next += 1;
        return { ...button, id: button.id ?? next };
      }),
    };
  });
}
