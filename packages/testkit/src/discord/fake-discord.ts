import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { sendJson } from "../http-io.js";
import { createFakeCdn, type FakeCdnRequest } from "./fake-discord-cdn.js";
import { createFakeGateway, type RecordedIdentify } from "./fake-discord-gateway.js";
import {
  createFakeInteractions,
  type FakeInteractionCallback,
  type FakePressInput,
} from "./fake-discord-interactions.js";
import {
  createFakeMessageEdits,
  type FakeMessageDeletion,
  type FakeMessageEdit,
} from "./fake-discord-message-edits.js";
import {
  createFakeRest,
  type FakeHeldResponse,
  type FakeRateLimitHit,
  type FakeSentMessage,
  type FakeTypingCall,
  type RecordedRestRequest,
} from "./fake-discord-rest.js";
import { DEFAULT_UPLOAD_LIMIT_BYTES } from "./fake-discord-schemas.js";
import {
  createFakeDiscordWorld,
  createSnowflakeGenerator,
  FAKE_DISCORD_TOKEN,
  type FakeChannel,
  type FakeDiscordUser,
  type FakeDiscordWorld,
  guildCreatePayload,
  messagePayload,
  readyPayload,
} from "./fake-discord-world.js";

/** Options of {@link startFakeDiscord}. */
export interface FakeDiscordOptions {
  /** The bot token the fake accepts; default {@link FAKE_DISCORD_TOKEN}. */
  readonly token?: string;
  /** `heartbeat_interval` sent in HELLO; default 500 ms (Discord's is ~41 s). */
  readonly heartbeatIntervalMs?: number;
  /** False refuses IDENTIFY with MESSAGE_CONTENT (close 4014), as when the portal toggle is off; default true. */
  readonly privilegedIntents?: boolean;
  /** Dispatch MESSAGE_CREATE for the bot's own posts too, as Discord does; default true. */
  readonly echoOwnMessages?: boolean;
  /** How long after a press its interaction can be acknowledged; default 3000 ms, as on Discord. */
  readonly acknowledgeWithinMs?: number;
  /**
   * How long a nonce sent with `enforce_nonce` returns the message created with it; default 2 minutes. Discord
   * documents only "a few minutes", so the default stays on the short side.
   */
  readonly nonceWindowMs?: number;
  /**
   * Largest file the bot may upload, in bytes; default {@link DEFAULT_UPLOAD_LIMIT_BYTES} (10 MiB, Discord's
   * for a bot in a guild without boosts). Larger gets 413 (40005).
   */
  readonly uploadLimitBytes?: number;
  /**
   * Milliseconds since the epoch, for the acknowledgement deadline, the nonce window, CDN URL expiry and the
   * times of edits; default `Date.now`.
   */
  readonly clock?: () => number;
}

/** Default of {@link FakeDiscordOptions.nonceWindowMs}. */
const NONCE_WINDOW_MS = 2 * 60_000;

/** Discord's message flag IS_VOICE_MESSAGE. */
const VOICE_MESSAGE_FLAG = 1 << 13;

/**
 * An attachment on a dispatched message. The fake's CDN serves it at the URL the message carries (signed, on the
 * fake's origin, as `cdn.discordapp.com` serves Discord's).
 */
export interface FakeAttachmentInput {
  readonly filename: string;
  readonly contentType?: string;
  /** The file's content; default `size` bytes of filler text. */
  readonly bytes?: Uint8Array;
  /** The size the message states; default the length of `bytes`, or 1024. May differ from `bytes` (a lying payload). */
  readonly size?: number;
  /** The CDN sends the first chunk and then hangs until the client gives up. */
  readonly stall?: boolean;
}

/** One of the bot's messages as it is now (edited content, deleted ones left out). */
export interface FakeShownMessage {
  readonly id: string;
  readonly channelId: string;
  readonly content: string;
  /** Names of the files on it. */
  readonly attachments: readonly string[];
  readonly edited: boolean;
}

/** A message a user "types", for {@link FakeDiscord.dispatchMessage}. */
export interface FakeMessageInput {
  /** Where it is said: the DM with the bot, `#general`, or the thread under it. */
  readonly where: "dm" | "channel" | "thread";
  readonly content: string;
  /** Default: the world's human user. */
  readonly author?: FakeDiscordUser;
  /** Prefixes the content with a mention of the bot: `<@id>` (user), `<@!id>` (nickname) or `<@&role>` (role). */
  readonly mention?: "user" | "nickname" | "role";
  /** Other users mentioned (`<@id>` must be in `content` already; this fills `mentions[]`). */
  readonly mentions?: readonly FakeDiscordUser[];
  /** Makes this a reply to that message object (e.g. `fake.sent()[0].message`). */
  readonly replyTo?: Record<string, unknown>;
  /** Whether the reply pings the replied-to author (Discord then lists them in `mentions`); default true. */
  readonly replyPing?: boolean;
  readonly attachments?: readonly FakeAttachmentInput[];
  /**
   * Makes this a voice message recorded in the app, as Discord sends one: flag IS_VOICE_MESSAGE, empty
   * content, and one `voice-message.ogg` attachment (audio/ogg) with its length and waveform.
   */
  readonly voice?: { readonly durationSecs: number; readonly size?: number };
}

/** A dispatch the fake sent (per session it gets its own sequence number). */
export interface FakeGatewayEvent {
  readonly t: string;
  readonly d: Record<string, unknown>;
}

/** A running fake Discord: REST under `/api/v10` and the gateway, on one port of 127.0.0.1. */
export interface FakeDiscord {
  /** `http://127.0.0.1:PORT/api`, for discord.js `rest.api`. */
  readonly apiUrl: string;
  /** `ws://127.0.0.1:PORT`, what `GET /gateway/bot` returns. */
  readonly gatewayUrl: string;
  /** The token the fake currently accepts. */
  token(): string;
  readonly world: FakeDiscordWorld;
  /** Sends MESSAGE_CREATE as a user would, and returns the event (for {@link FakeDiscord.redeliver}). */
  dispatchMessage(input: FakeMessageInput): FakeGatewayEvent;
  /** Sends an event's payload again under a new sequence number (Discord's at-least-once delivery). */
  redeliver(event: FakeGatewayEvent): void;
  /** Sends any dispatch event. */
  dispatch(t: string, d: Record<string, unknown>): FakeGatewayEvent;
  /**
   * Presses a button of one of the bot's messages as a user would (default the world's human user): dispatches
   * INTERACTION_CREATE (type 3, MESSAGE_COMPONENT) with the message as it is now, and returns the event.
   * @throws when that user could not press it: no such button (any more), a disabled or link button, a DM of
   * someone else.
   */
  pressButton(input: FakePressInput): FakeGatewayEvent;
  /** Every interaction callback the fake accepted (acknowledgements of presses). */
  interactionCallbacks(): readonly FakeInteractionCallback[];
  /** A message as it is now (after edits such as UPDATE_MESSAGE), by id. */
  message(id: string): Record<string, unknown> | undefined;
  /**
   * The bot's messages as a person sees them now, in the order they were posted (content after edits; deleted ones
   * left out), in one channel or all.
   */
  shown(channelId?: string): readonly FakeShownMessage[];
  /** Every accepted edit (`PATCH /channels/:id/messages/:id`), with the content after it and when (fake clock). */
  edits(): readonly FakeMessageEdit[];
  /** Deletes a message as a person or moderator would (MESSAGE_DELETE); editing it then gets 404 (10008). */
  deleteMessage(id: string): void;
  /** Every deletion: the bot's `DELETE` requests and {@link FakeDiscord.deleteMessage}. */
  deletions(): readonly FakeMessageDeletion[];
  /** Every request to the fake CDN (attachment downloads). */
  cdnRequests(): readonly FakeCdnRequest[];
  /**
   * Closes the bot's connections with `code` (default 4000: the client resumes). 1000 makes it identify
   * anew; 1006 cuts the socket without a close frame.
   */
  dropConnection(code?: number): void;
  /** The next RESUME gets op 9 `d: false`, so the client must IDENTIFY again. */
  invalidateNextResume(): void;
  /** Makes the current token invalid (as resetting it in the portal does): REST 401, IDENTIFY/RESUME 4004. */
  revokeToken(): void;
  /** The next request matching `route` (e.g. `"POST /channels/:id/messages"`) gets 429 + Retry-After. */
  rateLimitNext(route: string, retryAfterSeconds: number, options?: { readonly global?: boolean }): void;
  /** The next `times` requests matching `route` get HTTP `status`. */
  failNext(route: string, status: number, times?: number): void;
  /**
   * The next message the bot creates is created (and echoed) but its `POST` gets no answer until released, as when
   * the bot dies between Discord creating the message and hearing so. A repeat answered from its nonce is not held.
   */
  holdNextMessageResponse(): FakeHeldResponse;
  /** Every message the bot posted and the fake accepted. */
  sent(): readonly FakeSentMessage[];
  typing(): readonly FakeTypingCall[];
  requests(): readonly RecordedRestRequest[];
  rateLimits(): readonly FakeRateLimitHit[];
  /** Every event dispatched through the helpers, echoes of the bot's posts included. */
  events(): readonly FakeGatewayEvent[];
  /** Accepted IDENTIFYs. */
  identifies(): number;
  /** Every IDENTIFY, refused ones included, with the intents asked for. */
  identifyAttempts(): readonly RecordedIdentify[];
  /** Accepted RESUMEs. */
  resumes(): number;
  /** Open gateway connections that identified or resumed. */
  activeConnections(): number;
  close(): Promise<void>;
}

/** Starts a fake Discord (REST + gateway) on a random port of 127.0.0.1. */
export async function startFakeDiscord(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
  const world = createFakeDiscordWorld();
  const { ids } = world;
  const nextId = createSnowflakeGenerator();
  let token = options.token ?? FAKE_DISCORD_TOKEN;
  const echo = options.echoOwnMessages ?? true;
  const channels = new Map<string, FakeChannel>([
    [ids.channel, { type: "text", id: ids.channel, name: "general" }],
    [ids.thread, { type: "thread", id: ids.thread, name: "a-thread", parentId: ids.channel }],
    [ids.dmChannel, { type: "dm", id: ids.dmChannel, recipient: world.user }],
  ]);
  const messages = new Map<string, Record<string, unknown>>();
  const eventRecords: FakeGatewayEvent[] = [];
  let gatewayUrl = "";
  let origin = "";
  const clock = options.clock ?? Date.now;
  const cdn = createFakeCdn({ origin: () => origin, clock });

  const openDm = (recipientId: string): FakeChannel => {
    for (const channel of channels.values()) {
      if (channel.type === "dm" && channel.recipient.id === recipientId) return channel;
    }
    const known = [world.user, world.otherBot].find((user) => user.id === recipientId);
    const channel: FakeChannel = {
      type: "dm",
      id: nextId(),
      recipient: known ?? { id: recipientId, username: `user-${recipientId}` },
    };
    channels.set(channel.id, channel);
    return channel;
  };

  const gateway = createFakeGateway({
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 500,
    token: () => token,
    privilegedIntents: options.privilegedIntents ?? true,
    url: () => gatewayUrl,
    ready: (sessionId) => readyPayload(world, sessionId, gatewayUrl),
    afterReady: () => [{ t: "GUILD_CREATE", d: guildCreatePayload(world, [...channels.values()]) }],
  });

  const dispatch = (t: string, d: Record<string, unknown>): FakeGatewayEvent => {
    const event = { t, d };
    eventRecords.push(event);
    gateway.dispatch(t, d);
    return event;
  };

  function updated(message: Record<string, unknown>): void {
    messages.set(String(message.id), message);
    setImmediate(() => dispatch("MESSAGE_UPDATE", message));
  }

  const interactions = createFakeInteractions({
    world,
    channel: (id) => channels.get(id),
    message: (id) => messages.get(id),
    nextId,
    updated,
    acknowledgeWithinMs: options.acknowledgeWithinMs ?? 3000,
    clock,
  });

  const edits = createFakeMessageEdits({
    world,
    clock,
    message: (id) => messages.get(id),
    updated,
    deleted(message) {
      messages.delete(String(message.id));
      const { id, channel_id: channelId, guild_id: guildId } = message;
      setImmediate(() =>
        dispatch("MESSAGE_DELETE", {
          id,
          channel_id: channelId,
          ...(guildId === undefined ? {} : { guild_id: guildId }),
        }),
      );
    },
  });

  const rest = createFakeRest({
    world,
    clock,
    nonceWindowMs: options.nonceWindowMs ?? NONCE_WINDOW_MS,
    token: () => token,
    gatewayUrl: () => gatewayUrl,
    channel: (id) => channels.get(id),
    openDm,
    message: (id) => messages.get(id),
    nextId,
    created(message) {
      messages.set(String(message.id), message);
      if (echo) setImmediate(() => dispatch("MESSAGE_CREATE", message));
    },
    interactionCallback: interactions.callback,
    edits,
    cdn,
    uploadLimitBytes: options.uploadLimitBytes ?? DEFAULT_UPLOAD_LIMIT_BYTES,
  });

  const server = createServer((request, response) => {
    rest.handle(request, response).catch((error: unknown) => {
      sendJson(response, 500, { message: `fake discord: ${String(error)}`, code: 0 });
    });
  });
  const sockets = new WebSocketServer({ server });
  sockets.on("connection", (socket) => gateway.accept(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  gatewayUrl = `ws://127.0.0.1:${port}`;
  origin = `http://127.0.0.1:${port}`;

  const channelFor = (input: FakeMessageInput, author: FakeDiscordUser): FakeChannel => {
    if (input.where === "dm") return openDm(author.id);
    const channel = channels.get(input.where === "thread" ? ids.thread : ids.channel);
    if (channel === undefined) throw new Error("fake discord: world channel missing");
    return channel;
  };

  return {
    apiUrl: `http://127.0.0.1:${port}/api`,
    gatewayUrl,
    token: () => token,
    world,
    dispatchMessage(input) {
      const author = input.author ?? world.user;
      const mention = botMention(input.mention, world);
      const repliedAuthor = replyAuthor(input.replyTo, world);
      const pinged = input.replyPing !== false && repliedAuthor !== undefined ? [repliedAuthor] : [];
      const channel = channelFor(input, author);
      const message = messagePayload({
        id: nextId(),
        channel,
        author,
        guildId: ids.guild,
        content: `${mention.prefix}${input.content}`,
        mentions: [...mention.users, ...(input.mentions ?? []), ...pinged],
        mentionRoles: mention.roles,
        ...(input.voice === undefined ? {} : { flags: VOICE_MESSAGE_FLAG }),
        attachments: [
          ...(input.attachments ?? []),
          ...(input.voice === undefined
            ? []
            : [
                { filename: "voice-message.ogg", contentType: "audio/ogg", size: input.voice.size ?? 18_432 },
              ]),
        ].map((attachment: FakeAttachmentInput) => {
          const id = nextId();
          const served = attachment.bytes?.length ?? attachment.size ?? 1024;
          const url = cdn.put({
            id,
            channelId: channel.id,
            filename: attachment.filename,
            ...(attachment.contentType === undefined ? {} : { contentType: attachment.contentType }),
            ...(attachment.bytes === undefined ? {} : { bytes: attachment.bytes }),
            size: served,
            ...(attachment.stall === undefined ? {} : { stall: attachment.stall }),
          });
          return {
            id,
            filename: attachment.filename,
            size: attachment.size ?? served,
            url,
            proxy_url: url,
            ...(attachment.contentType === undefined ? {} : { content_type: attachment.contentType }),
            ...(input.voice === undefined
              ? {}
              : {
                  duration_secs: input.voice.durationSecs,
                  waveform: Buffer.alloc(64, 7).toString("base64"),
                }),
          };
        }),
        ...(input.replyTo === undefined ? {} : { replyTo: input.replyTo }),
      });
      messages.set(String(message.id), message);
      return dispatch("MESSAGE_CREATE", message);
    },
    redeliver(event) {
      dispatch(event.t, event.d);
    },
    dispatch,
    pressButton: (input) => dispatch("INTERACTION_CREATE", interactions.press(input)),
    interactionCallbacks: () => interactions.callbacks(),
    message: (id) => messages.get(id),
    shown(channelId) {
      return rest.sent().flatMap((sent): FakeShownMessage[] => {
        const message = messages.get(sent.id);
        if (message === undefined || (channelId !== undefined && sent.channelId !== channelId)) return [];
        const attachments = Array.isArray(message.attachments) ? (message.attachments as unknown[]) : [];
        return [
          {
            id: sent.id,
            channelId: sent.channelId,
            content: String(message.content ?? ""),
            attachments: attachments.map((attachment) =>
              typeof attachment === "object" && attachment !== null && "filename" in attachment
                ? String(attachment.filename)
                : "",
            ),
            edited: message.edited_timestamp !== null && message.edited_timestamp !== undefined,
          },
        ];
      });
    },
    edits: () => edits.edits(),
    deleteMessage: (id) => edits.removeBySomeoneElse(id),
    deletions: () => edits.deletions(),
    cdnRequests: () => cdn.requests(),
    dropConnection(code = 4000) {
      gateway.drop(code);
    },
    invalidateNextResume: () => gateway.invalidateNextResume(),
    revokeToken() {
      token = `${token}-revoked`;
    },
    rateLimitNext: (route, seconds, rateOptions) => rest.rateLimitNext(route, seconds, rateOptions),
    failNext: (route, status, times) => rest.failNext(route, status, times),
    holdNextMessageResponse: () => rest.holdNextMessageResponse(),
    sent: () => rest.sent(),
    typing: () => rest.typing(),
    requests: () => rest.requests(),
    rateLimits: () => rest.rateLimits(),
    events: () => [...eventRecords],
    identifies: () => gateway.identifies().filter((attempt) => attempt.accepted).length,
    identifyAttempts: () => gateway.identifies(),
    resumes: () => gateway.resumes(),
    activeConnections: () => gateway.activeConnections(),
    async close() {
      rest.releaseHeld();
      gateway.close();
      await new Promise<void>((resolve) => sockets.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function botMention(kind: FakeMessageInput["mention"], world: FakeDiscordWorld) {
  const { ids, botUser } = world;
  switch (kind) {
    case "user":
      return { prefix: `<@${ids.bot}> `, users: [botUser], roles: [] };
    case "nickname":
      return { prefix: `<@!${ids.bot}> `, users: [botUser], roles: [] };
    case "role":
      return { prefix: `<@&${ids.botRole}> `, users: [], roles: [ids.botRole] };
    default:
      return { prefix: "", users: [], roles: [] };
  }
}

function replyAuthor(message: Record<string, unknown> | undefined, world: FakeDiscordWorld) {
  const author: unknown = message?.author;
  const authorId = typeof author === "object" && author !== null && "id" in author ? author.id : undefined;
  return [world.botUser, world.user, world.otherBot].find((user) => user.id === authorId);
}
