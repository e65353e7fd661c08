import {
  type AttachmentDownloadAdapter,
  type ChannelStatus,
  type DownloadedAttachment,
  type DownloadLimits,
  type FileSendingAdapter,
  type InboundAttachment,
  type InboundMessage,
  type Logger,
  type OutboundFile,
  type OutboundMessage,
  type ReplyStream,
  type StreamingReplyAdapter,
  silentLogger,
  type TypingIndicatorAdapter,
} from "@almanac/core";
import { type Client, Events, GatewayDispatchEvents, RESTEvents, Routes } from "discord.js";
import { acknowledgePress } from "./acknowledge-press.js";
import { discordCdnOrigins, downloadDiscordAttachment } from "./attachment-download.js";
import { ConnectionStatus, type FatalClose, fatalClose } from "./connection-status.js";
import { isNoise, parseMessageCreate, toInboundMessage, toInboundPress } from "./convert-inbound.js";
import {
  type DiscordButtonRows,
  resolveTarget,
  toDiscordButtonRows,
  toDiscordChunks,
  toDiscordNonce,
} from "./convert-outbound.js";
import {
  botRoleIds,
  createDiscordClient,
  fatalLoginError,
  locateChannel,
  openDmChannel,
  waitForClientReady,
} from "./discord-client.js";
import { type DiscordButtonPress, parseInteraction } from "./discord-interaction-schema.js";
import { EditPacer } from "./edit-pacer.js";
import { discordUserError, toDiscordApiError } from "./errors.js";
import { deleteMessage, editMessage, postMessage, toCreateBody } from "./message-requests.js";
import { DiscordReplyStream } from "./reply-stream.js";
import {
  DISCORD_UPLOAD_LIMIT_BYTES,
  type DiscordAdapterOptions,
  type DiscordAdapterSettings,
  type DiscordTimers,
} from "./types.js";
import { startTypingLoop } from "./typing-loop.js";

const MAX_RETRY_DELAY_MS = 5 * 60_000;

/**
 * Discord over the gateway with discord.js: normalizes MESSAGE_CREATE into {@link InboundMessage}s,
 * answers in the same channel/thread/DM (split at 2000 characters, buttons under the last part), streams replies
 * by editing them, downloads attachments from the CDN and uploads files, turns presses of its buttons
 * (INTERACTION_CREATE) into inbound messages, shows "typing…", reports status, and relies on discord.js to resume
 * or re-identify after drops. Policy (dedup, allowlists, mention gating) is the server gate's job; this adapter
 * only drops its own, other bots' and system messages.
 */
export class DiscordAdapter
  implements TypingIndicatorAdapter, AttachmentDownloadAdapter, StreamingReplyAdapter, FileSendingAdapter
{
  /** Channel name in session keys. */
  readonly name = "discord";
  /** The bot account in session keys. */
  readonly account: string;
  /**
   * Sends with an `idempotencyKey` carry a nonce Discord enforces (see {@link toDiscordNonce}): a repeat within the
   * few minutes Discord keeps nonces posts nothing new (docs/channels/discord.md).
   */
  readonly idempotentSends = true;
  /** Discord deduplicates a nonce "for the same sender within a few minutes": two minutes is taken as safe. */
  readonly idempotencyWindowMs = 120_000;
  readonly #token: string;
  readonly #apiBaseUrl: string;
  readonly #logger: Logger;
  readonly #clock: () => number;
  readonly #typingIntervalMs: number;
  readonly #retryDelayMs: number;
  readonly #status: ConnectionStatus;
  readonly #timers: DiscordTimers;
  /** One pace for every streamed reply, so two replies in one channel share its edit budget. */
  readonly #pacer: EditPacer;
  readonly #firstPostDelayMs: number;
  readonly #fetch: typeof fetch;
  readonly #cdnOrigins: readonly string[];
  readonly #typingStops = new Set<() => Promise<void>>();
  /** DM channel id per user id, learned from inbound DMs or opened on demand. */
  readonly #dmChannels = new Map<string, string>();
  #client: Client | undefined;
  #onMessage: ((message: InboundMessage) => void) | undefined;
  #running = false;
  #fatal: FatalClose | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryAttempt = 0;
  #abortLogin: (() => void) | undefined;
  /** Inbound messages are normalized one after another, so they reach the server in gateway order. */
  #inbound: Promise<void> = Promise.resolve();
  /** Button-press acknowledgements on their way to Discord (`stop` lets them finish). */
  readonly #acknowledgements = new Set<Promise<void>>();

  /** `settings` come validated from the configuration schema (`discordChannel.settings`). */
  constructor(settings: DiscordAdapterSettings, options: DiscordAdapterOptions = {}) {
    const account = options.account ?? "default";
    if (account.trim() === "")
      throw discordUserError("discord.config_invalid", "The Discord account is empty.");
    this.account = account;
    this.#token = settings.token;
    this.#apiBaseUrl = settings.apiBaseUrl.replace(/\/+$/, "");
    this.#logger = (options.logger ?? silentLogger).child({ channel: "discord", account });
    this.#clock = options.clock ?? Date.now;
    this.#typingIntervalMs = options.typingIntervalMs ?? 8000;
    this.#retryDelayMs = options.retryDelayMs ?? 5000;
    this.#status = new ConnectionStatus(this.#clock);
    this.#timers = options.timers ?? {
      setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    };
    this.#pacer = new EditPacer(options.streamEditIntervalMs ?? 1000, this.#clock);
    this.#firstPostDelayMs = options.streamFirstPostDelayMs ?? 1000;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#cdnOrigins = discordCdnOrigins(this.#apiBaseUrl);
  }

  /**
   * Logs in and resolves once the gateway is ready. A passing failure (network, Discord 5xx) is retried
   * in the background with growing delays and `start` resolves with status `connecting`.
   * @throws UserError `discord.auth_failed` / `discord.gateway_refused` when retrying cannot help; status is `error`.
   */
  async start(onMessage: (message: InboundMessage) => void): Promise<void> {
    if (this.#running)
      throw discordUserError("discord.already_started", "The Discord adapter is already started.");
    this.#running = true;
    this.#onMessage = onMessage;
    this.#retryAttempt = 0;
    await this.#connect();
  }

  /**
   * Posts `message.text` (converted, split at 2000 characters); the first part replies to `inReplyTo`, and
   * `message.buttons` go under the last part (a press comes back as an inbound message with the button's reply).
   * With `message.idempotencyKey` each part carries a nonce Discord enforces, so sending it again does not repeat it.
   */
  async send(message: OutboundMessage): Promise<void> {
    const client = this.#requireClient();
    const target = resolveTarget(message, this.account);
    const channelId =
      target.kind === "channel" ? target.channelId : await this.#openDm(client, target.userId);
    const chunks = toDiscordChunks(message.text);
    const components = this.#buttonRows(message.buttons);
    // Buttons without text still make a message (Discord accepts components alone).
    if (chunks.length === 0 && components.length > 0) chunks.push("");
    for (const [index, content] of chunks.entries()) {
      const replyTo = index === 0 && target.kind === "channel" ? target.replyToMessageId : undefined;
      const last = index === chunks.length - 1;
      const body = {
        ...toCreateBody(channelId, { content, ...(replyTo === undefined ? {} : { replyTo }) }),
        ...(last && components.length > 0 ? { components } : {}),
        ...(message.idempotencyKey === undefined ? {} : toDiscordNonce(message.idempotencyKey, index)),
      };
      try {
        await client.rest.post(Routes.channelMessages(channelId), { body });
      } catch (error) {
        const where = `Posting part ${index + 1} of ${chunks.length} to Discord channel ${channelId}`;
        throw toDiscordApiError("discord.send_failed", where, error);
      }
    }
  }

  /**
   * Starts a reply shown as it is written (see {@link DiscordReplyStream}): posted a second after the first text
   * (`streamFirstPostDelayMs`), edited at most once per second per channel, continued past 2000 characters,
   * finished exactly. Buttons and the
   * idempotency key of `message` are not used (a streamed reply is a turn's answer, which has neither).
   */
  startReplyStream(message: OutboundMessage): ReplyStream {
    this.#requireClient();
    const target = resolveTarget(message, this.account);
    let channel: Promise<string> | undefined;
    const channelId = () =>
      (channel ??=
        target.kind === "channel"
          ? Promise.resolve(target.channelId)
          : this.#openDm(this.#requireClient(), target.userId));
    const replyTo = target.kind === "channel" ? target.replyToMessageId : undefined;
    return new DiscordReplyStream({
      conversation: target.kind === "channel" ? target.channelId : `dm:${target.userId}`,
      pacer: this.#pacer,
      firstPostDelayMs: this.#firstPostDelayMs,
      clock: this.#clock,
      timers: this.#timers,
      logger: this.#logger,
      transport: {
        post: async (content, asReply) => {
          const id = await channelId();
          const reply = asReply && replyTo !== undefined ? { replyTo } : {};
          return postMessage(this.#requireClient(), id, toCreateBody(id, { content, ...reply }));
        },
        edit: async (messageId, content) =>
          editMessage(this.#requireClient(), await channelId(), messageId, content),
        remove: async (messageId) => deleteMessage(this.#requireClient(), await channelId(), messageId),
      },
    });
  }

  /**
   * Downloads an attachment of `message` from Discord's CDN within `limits` (see {@link downloadDiscordAttachment}):
   * only from the CDN (or, for tests, the REST base's origin), never with the bot token.
   */
  downloadAttachment(
    _message: InboundMessage,
    attachment: InboundAttachment,
    limits: DownloadLimits,
  ): Promise<DownloadedAttachment> {
    return downloadDiscordAttachment(attachment, limits, { fetch: this.#fetch, origins: this.#cdnOrigins });
  }

  /**
   * Uploads a file to the conversation (threaded to `inReplyTo` when given) with its caption; a caption longer
   * than one message follows in further messages.
   * @throws UserError `discord.file_too_large` over {@link DISCORD_UPLOAD_LIMIT_BYTES}, before anything is sent
   * @throws DiscordApiError `discord.send_failed` when Discord refuses the upload
   */
  async sendFile(file: OutboundFile): Promise<void> {
    if (file.bytes.byteLength > DISCORD_UPLOAD_LIMIT_BYTES) {
      const bytes = (count: number) => `${count.toLocaleString("en-US")} bytes`;
      throw discordUserError(
        "discord.file_too_large",
        `The file "${file.name}" (${bytes(file.bytes.byteLength)}) is larger than Discord takes from a bot: ${DISCORD_UPLOAD_LIMIT_BYTES / 1_048_576} MB (${bytes(DISCORD_UPLOAD_LIMIT_BYTES)}).`,
      );
    }
    const client = this.#requireClient();
    const target = resolveTarget(
      {
        sessionKey: file.sessionKey,
        text: "",
        ...(file.inReplyTo === undefined ? {} : { inReplyTo: file.inReplyTo }),
      },
      this.account,
    );
    const channelId =
      target.kind === "channel" ? target.channelId : await this.#openDm(client, target.userId);
    const [first = "", ...rest] = toDiscordChunks(file.caption ?? "");
    const replyTo = target.kind === "channel" ? target.replyToMessageId : undefined;
    const body = toCreateBody(channelId, { content: first, ...(replyTo === undefined ? {} : { replyTo }) });
    const upload = { name: file.name, data: Buffer.from(file.bytes), contentType: file.contentType };
    await postMessage(client, channelId, body, [upload]);
    for (const content of rest) await postMessage(client, channelId, toCreateBody(channelId, { content }));
  }

  /** Shows "typing…" in the conversation of `message` now and every `typingIntervalMs` until stopped. */
  async startTyping(message: InboundMessage): Promise<() => Promise<void>> {
    const client = this.#requireClient();
    const target = resolveTarget(
      { sessionKey: message.sessionKey, text: "", inReplyTo: message },
      this.account,
    );
    const channelId =
      target.kind === "channel" ? target.channelId : await this.#openDm(client, target.userId);
    const stopLoop = await startTypingLoop({
      intervalMs: this.#typingIntervalMs,
      pulse: async () => {
        await (this.#client ?? client).rest.post(Routes.channelTyping(channelId));
      },
      onError: (error) =>
        this.#logger.warn(
          { error: toDiscordApiError("discord.send_failed", "Typing", error).message },
          "typing failed",
        ),
    });
    const stop = async (): Promise<void> => {
      this.#typingStops.delete(stop);
      await stopLoop();
    };
    this.#typingStops.add(stop);
    if (!this.#running) await stop();
    return stop;
  }

  /** `connecting` / `ready` / `error` (with the reason) / `disabled` after stop, and `lastEventAt`. */
  status(): ChannelStatus {
    return this.#status.snapshot(this.name);
  }

  /** Stops typing loops and retries and destroys the client (closing the gateway with 1000). */
  async stop(): Promise<void> {
    this.#running = false;
    this.#abortLogin?.();
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    await Promise.all([...this.#typingStops].map((stop) => stop()));
    await Promise.allSettled([...this.#acknowledgements]);
    const client = this.#client;
    this.#client = undefined;
    this.#status.set("disabled", "stopped");
    await client?.destroy();
    await this.#inbound;
  }

  async #connect(): Promise<void> {
    this.#retryTimer = undefined;
    this.#fatal = undefined;
    const client = createDiscordClient(this.#apiBaseUrl);
    this.#client = client;
    this.#status.set("connecting", "logging in");
    this.#wire(client);
    const ready = waitForClientReady(client);
    const attempt = (async () => {
      await client.login(this.#token);
      await ready.promise;
    })();
    // `stop()` during login must not leave `start()` waiting for a ready that never comes.
    const stopped = new Promise<never>((_resolve, reject) => {
      this.#abortLogin = () => reject(new Error("stopped while connecting"));
    });
    attempt.catch(() => {});
    stopped.catch(() => {});
    try {
      await Promise.race([attempt, stopped]);
      this.#retryAttempt = 0;
    } catch (error) {
      ready.cancel();
      if (this.#client === client) this.#client = undefined;
      await client.destroy();
      if (this.#running) this.#loginFailed(error);
    } finally {
      this.#abortLogin = undefined;
    }
  }

  #loginFailed(error: unknown): void {
    const fatal = this.#fatal ?? fatalLoginError(error);
    if (fatal !== undefined) {
      this.#running = false;
      this.#status.set("error", fatal.detail);
      this.#logger.error({ code: fatal.code }, fatal.detail);
      throw discordUserError(fatal.errorCode, fatal.detail, error);
    }
    const failure = toDiscordApiError("discord.connect_failed", "Connecting to Discord failed", error);
    const delay = Math.min(this.#retryDelayMs * 2 ** this.#retryAttempt, MAX_RETRY_DELAY_MS);
    this.#retryAttempt += 1;
    this.#status.set("connecting", `${failure.message}; retrying in ${Math.ceil(delay / 1000)} s`);
    this.#logger.warn({ error: failure.message, retryInMs: delay }, "discord login failed; will retry");
    this.#retryTimer = setTimeout(() => {
      this.#connect().catch((retryError: unknown) =>
        this.#logger.error({ error: String(retryError) }, "discord reconnect gave up"),
      );
    }, delay);
    this.#retryTimer.unref();
  }

  #wire(client: Client): void {
    const current = () => this.#running && client === this.#client;
    const ready = (detail?: string) => {
      if (!current()) return;
      this.#status.set("ready", detail);
      this.#status.touch();
    };
    // Raw dispatch listeners run before discord.js builds its structures, which add circular references to
    // the payload objects; a copy taken now stays the payload Discord sent (it becomes `InboundMessage.raw`).
    client.ws.on(GatewayDispatchEvents.MessageCreate, (data: unknown) => {
      if (!current()) return;
      const receivedAt = this.#status.touch();
      const payload = structuredClone(data);
      this.#inbound = this.#inbound
        .then(() => this.#deliver(client, payload, receivedAt))
        .catch((error: unknown) => this.#logger.error({ error: String(error) }, "discord message dropped"));
    });
    // Interactions reach a gateway bot whatever its intents: no intent is needed for button presses.
    client.ws.on(GatewayDispatchEvents.InteractionCreate, (data: unknown) => {
      if (!current()) return;
      const parsed = parseInteraction(structuredClone(data));
      if (parsed.kind === "ignored") return;
      if (parsed.kind === "invalid") {
        this.#logger.warn({ error: parsed.error }, "discord button press payload not understood; dropped");
        return;
      }
      const receivedAt = this.#status.touch();
      // Discord waits 3 s for the acknowledgement: it goes out at once, not behind queued messages.
      this.#acknowledge(client, parsed.press);
      this.#inbound = this.#inbound
        .then(() => this.#deliverPress(client, parsed.press, parsed.raw, receivedAt))
        .catch((error: unknown) =>
          this.#logger.error({ error: String(error) }, "discord button press dropped"),
        );
    });
    client.on(Events.ClientReady, (readyClient) => {
      this.#logger.info(
        { user: readyClient.user.tag, guilds: readyClient.guilds.cache.size },
        "discord ready",
      );
      ready();
    });
    client.on(Events.ShardReady, () => ready());
    client.on(Events.ShardResume, (_shard, replayed) => {
      this.#logger.info({ replayed }, "discord gateway resumed");
      ready();
    });
    client.on(Events.ShardReconnecting, () => {
      if (!current()) return;
      this.#status.set("connecting", "reconnecting to the gateway");
      this.#logger.warn({}, "discord gateway connection lost; reconnecting");
    });
    client.on(Events.ShardDisconnect, (event) => {
      const fatal = fatalClose(event.code) ?? {
        code: event.code,
        errorCode: "discord.gateway_refused",
        detail: `Discord closed the gateway with code ${event.code} and discord.js will not reconnect.`,
      };
      if (!current()) return;
      this.#fatal = fatal;
      this.#status.set("error", fatal.detail);
      this.#logger.error({ code: event.code }, fatal.detail);
    });
    client.on(Events.Invalidated, () => {
      if (current()) this.#status.set("error", "Discord invalidated the session; restart the channel.");
    });
    client.on(Events.ShardError, (error) =>
      this.#logger.warn({ error: error.message }, "discord shard error"),
    );
    client.on(Events.Error, (error) => this.#logger.error({ error: error.message }, "discord client error"));
    client.on(Events.Warn, (message) => this.#logger.warn({}, `discord: ${message}`));
    client.on(Events.Debug, (message) => this.#logger.debug({}, `discord: ${message}`));
    client.rest.on(RESTEvents.RateLimited, (info) =>
      this.#logger.warn(
        {
          route: info.route,
          method: info.method,
          retryAfterMs: info.retryAfter,
          global: info.global,
          scope: info.scope,
        },
        "discord rate limited; waiting before retrying",
      ),
    );
  }

  async #deliver(client: Client, data: unknown, receivedAt: number): Promise<void> {
    const parsed = parseMessageCreate(data);
    if (!parsed.ok) {
      this.#logger.warn({ error: parsed.error }, "discord MESSAGE_CREATE payload not understood; dropped");
      return;
    }
    const { message } = parsed;
    const botUserId = client.user?.id;
    if (botUserId === undefined || isNoise(message, botUserId)) return;
    const location = await locateChannel(client, message.channel_id, message.guild_id);
    const inbound = toInboundMessage(message, data, {
      account: this.account,
      botUserId,
      botRoleIds: botRoleIds(client, message.guild_id, botUserId),
      location,
      receivedAt,
    });
    if (inbound === undefined || !this.#running) return;
    if (location.kind === "dm") this.#dmChannels.set(message.author.id, message.channel_id);
    this.#emit(inbound);
  }

  /** A press of one of the adapter's buttons, handed on as the message its reply stands for. */
  async #deliverPress(
    client: Client,
    press: DiscordButtonPress,
    raw: unknown,
    receivedAt: number,
  ): Promise<void> {
    const location = await locateChannel(client, press.channelId, press.guildId);
    const inbound = toInboundPress(press, raw, { account: this.account, location, receivedAt });
    if (!this.#running) return;
    if (location.kind === "dm") this.#dmChannels.set(press.presser.id, press.channelId);
    this.#emit(inbound);
  }

  #emit(inbound: InboundMessage): void {
    try {
      this.#onMessage?.(inbound);
    } catch (error) {
      this.#logger.error({ error: String(error), messageId: inbound.id }, "message handler threw");
    }
  }

  /** Acknowledges a press; a failure is logged (the presser sees "This interaction failed"), never thrown. */
  #acknowledge(client: Client, press: DiscordButtonPress): void {
    const acknowledgement = acknowledgePress(client, press).catch((error: unknown) => {
      const failure = toDiscordApiError("discord.send_failed", "Acknowledging a button press", error);
      this.#logger.warn(
        { error: failure.message, interactionId: press.id },
        "discord button press not acknowledged",
      );
    });
    this.#acknowledgements.add(acknowledgement);
    void acknowledgement.finally(() => this.#acknowledgements.delete(acknowledgement));
  }

  /** Action rows for `buttons`; buttons Discord would refuse are left out with a warning. */
  #buttonRows(buttons: OutboundMessage["buttons"]): DiscordButtonRows["rows"] {
    if (buttons === undefined || buttons.length === 0) return [];
    const { rows, dropped } = toDiscordButtonRows(buttons);
    for (const { label, reason } of dropped) {
      this.#logger.warn({ label, reason }, "discord button left out of the message");
    }
    return rows;
  }

  async #openDm(client: Client, userId: string): Promise<string> {
    const known = this.#dmChannels.get(userId);
    if (known !== undefined) return known;
    const channelId = await openDmChannel(client, userId);
    this.#dmChannels.set(userId, channelId);
    return channelId;
  }

  #requireClient(): Client {
    if (this.#running && this.#client !== undefined) return this.#client;
    throw discordUserError(
      "discord.not_started",
      `The Discord adapter is not connected (state ${this.#status.state}); start it first.`,
    );
  }
}

/** Creates the Discord channel adapter from validated settings. Nothing connects until `start`. */
export function createDiscordAdapter(
  settings: DiscordAdapterSettings,
  options: DiscordAdapterOptions = {},
): DiscordAdapter {
  return new DiscordAdapter(settings, options);
}
