import {
  type ChannelAdapter,
  type ChannelStatus,
  canDownloadAttachments,
  canSendFiles,
  canStreamReplies,
  hasTypingIndicator,
  type InboundMessage,
  isAlmanacError,
  type Logger,
  type OutboundFile,
  type OutboundMessage,
  parseSessionKey,
  type ReplyStream,
  silentLogger,
} from "@almanac/core";
import type { AttachmentDownload, AttachmentIntake } from "../attachments/attachment-intake.js";
import { attachmentNoticeText, type ReceivedAttachment } from "../attachments/received-attachment.js";
import { textForPeople } from "../errors/error-codes.js";
import type { SessionManager } from "../runtime/session-manager.js";
import { type AccessPolicy, checkAccess } from "./access-policy.js";
import type { DedupStore } from "./dedup-store.js";

/** One configured channel: the adapter and who may use it. */
export interface ChannelEntry {
  readonly adapter: ChannelAdapter;
  readonly policy: AccessPolicy;
}

/** Options of {@link ChannelHub}. */
export interface ChannelHubOptions {
  readonly channels: readonly ChannelEntry[];
  /** Names of channels known to Almanac but not configured (reported as `disabled`). */
  readonly disabled: readonly string[];
  readonly dedup: DedupStore;
  readonly sessions: SessionManager;
  /**
   * Takes each message's images and attachments (download, check, save, transcribe) before its turn. Absent:
   * messages go to their turn as they came, with attachments described to the model as not downloaded.
   */
  readonly attachments?: AttachmentIntake;
  /** Channels whose replies are shown as they are written, where the adapter can (`ALMANAC_STREAM_REPLIES`). */
  readonly streamReplies?: readonly string[];
  readonly logger?: Logger;
}

/**
 * What became of a file sent to a conversation by its session key: uploaded, refused because the channel's adapter
 * cannot upload files, or not sent because the conversation is not on a chat app configured here.
 */
export type FileSendOutcome = "sent" | "cannot-send-files" | "no-channel";

/** The channel of a session key (its first part). */
function channelOf(sessionKey: string): string {
  return parseSessionKey(sessionKey).channel;
}

/** What the user sees when a turn fails: plain words from the error code registry, no internals (details go to the log). */
function failureText(error: unknown): string {
  return isAlmanacError(error)
    ? textForPeople(error.code, error.category)
    : textForPeople("turn.failed", "internal");
}

/**
 * A message's place in its conversation: the turn of the message before it must be queued in the session's lane
 * before this one's is (`previous`), and this one says when its own is (`queued`).
 */
interface ArrivalOrder {
  readonly previous: Promise<void>;
  readonly queued: () => void;
}

/**
 * Runs every chat-platform adapter: gate (dedup, access), session turn, reply.
 *
 * Each message is handled detached from the adapter's callback (adapters ack the platform at once); its
 * conversation's arrival order is registered synchronously in that callback, so a later message of the same
 * conversation never has its turn queued before an earlier one's, however long the earlier one's downloads take.
 */
export class ChannelHub {
  readonly #options: ChannelHubOptions;
  readonly #logger: Logger;
  readonly #policies: ReadonlyMap<string, AccessPolicy>;
  readonly #adapters: ReadonlyMap<string, ChannelAdapter>;
  readonly #streaming: ReadonlySet<string>;
  /** Messages being handled; `stop` waits for them (up to its deadline). */
  readonly #inFlight = new Set<Promise<void>>();
  /** Per session key: resolves once the newest arrived message's turn is queued (or it was dropped). */
  readonly #arrivals = new Map<string, Promise<void>>();
  /** Aborts downloads still running when the hub stops. */
  readonly #stopping = new AbortController();

  constructor(options: ChannelHubOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#policies = new Map(options.channels.map((entry) => [entry.adapter.name, entry.policy]));
    this.#adapters = new Map(options.channels.map((entry) => [entry.adapter.name, entry.adapter]));
    this.#streaming = new Set(options.streamReplies ?? []);
  }

  /** Connects every adapter; one that fails to start is logged and reported by `statuses()`, not thrown. */
  async start(): Promise<void> {
    await Promise.all(
      [...this.#adapters.values()].map(async (adapter) => {
        try {
          await adapter.start((message) => {
            // Adapters must ack the platform at once: the turn runs detached from the callback.
            const task = this.#process(adapter, message, this.#arrive(message.sessionKey)).catch(
              (error: unknown) =>
                this.#logger.error({ err: error, channel: adapter.name }, "channel message handling failed"),
            );
            this.#inFlight.add(task);
            void task.finally(() => this.#inFlight.delete(task));
          });
          this.#logger.info({ channel: adapter.name }, "channel started");
        } catch (error) {
          this.#logger.error(
            { err: error, channel: adapter.name },
            "channel failed to start; see GET /api/channels",
          );
        }
      }),
    );
  }

  /** Every configured adapter's status, then the channels known but not configured (as `disabled`). */
  statuses(): ChannelStatus[] {
    return [
      ...[...this.#adapters.values()].map((adapter) => adapter.status()),
      ...this.#options.disabled.map(
        (channel): ChannelStatus => ({ channel, state: "disabled", detail: "not configured" }),
      ),
    ];
  }

  /**
   * Sends a message to a conversation nobody just wrote in (a scheduled task's reply, a question of the
   * assistant's), by its session key. False when the conversation is not on a chat app configured here (the
   * console's and the API's conversations get it through their transcript and the live events).
   */
  async deliver(message: OutboundMessage): Promise<boolean> {
    const adapter = this.#adapters.get(channelOf(message.sessionKey));
    if (adapter === undefined) return false;
    await adapter.send(message);
    return true;
  }

  /**
   * Uploads a file to a conversation by its session key (the assistant's `send_file`), through the platform's
   * upload API. The adapter's errors reach the caller: `AttachmentTooLargeError` for a file over the platform's
   * limit.
   */
  async sendFile(file: OutboundFile): Promise<FileSendOutcome> {
    const adapter = this.#adapters.get(channelOf(file.sessionKey));
    if (adapter === undefined) return "no-channel";
    if (!canSendFiles(adapter)) return "cannot-send-files";
    await adapter.sendFile(file);
    return "sent";
  }

  /**
   * True when a send to this conversation that began at `since` may be repeated now with the same key without a
   * duplicate (the platform deduplicates, and still does after that long).
   */
  canRepeatSend(sessionKey: string, since: number): boolean {
    const adapter = this.#adapters.get(channelOf(sessionKey));
    if (adapter === undefined) return true;
    const window = adapter.idempotencyWindowMs ?? Number.POSITIVE_INFINITY;
    return adapter.idempotentSends === true && Date.now() - since < window;
  }

  /** Stops the adapters after replies already being sent went out (up to the deadline). */
  async stop(deadlineMs: number): Promise<void> {
    this.#stopping.abort();
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, deadlineMs).unref());
    await Promise.race([Promise.allSettled([...this.#inFlight]), deadline]);
    await Promise.allSettled([...this.#adapters.values()].map((adapter) => adapter.stop()));
  }

  /** Registers a message's arrival, synchronously in the adapter's callback, so arrival order is kept. */
  #arrive(sessionKey: string): ArrivalOrder {
    const previous = this.#arrivals.get(sessionKey) ?? Promise.resolve();
    let queued: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      queued = resolve;
    });
    this.#arrivals.set(sessionKey, mine);
    void mine.then(() => {
      if (this.#arrivals.get(sessionKey) === mine) this.#arrivals.delete(sessionKey);
    });
    return { previous, queued };
  }

  async #process(adapter: ChannelAdapter, message: InboundMessage, order: ArrivalOrder): Promise<void> {
    try {
      await this.#handleMessage(adapter, message, order);
    } finally {
      order.queued(); // dropped, refused or failed before its turn: the next message must not wait for it
    }
  }

  async #handleMessage(adapter: ChannelAdapter, message: InboundMessage, order: ArrivalOrder): Promise<void> {
    const log = this.#logger.child({
      channel: adapter.name,
      sessionKey: message.sessionKey,
      messageId: message.id,
    });
    if (!(await this.#options.dedup.firstSeen(`${adapter.name}:${message.account}:${message.id}`))) {
      log.info({}, "dropped a redelivered event");
      return;
    }
    const policy = this.#policies.get(adapter.name);
    const decision = policy
      ? checkAccess(policy, message)
      : { allowed: false as const, reason: "no access policy" };
    if (!decision.allowed) {
      log.info(
        { senderId: message.sender.id, reason: decision.reason },
        "message refused by the channel gate",
      );
      return;
    }
    const stopTyping = hasTypingIndicator(adapter)
      ? await adapter.startTyping(message).catch((error: unknown) => {
          log.warn({ err: error }, "typing indicator failed");
          return undefined;
        })
      : undefined;
    let prefix = "";
    let text: string;
    let stream: ReplyStream | undefined;
    try {
      // Downloads run here, outside the session's lane: a slow one holds up no other conversation, and the
      // conversation's own later messages wait below, so none overtakes it.
      const received = await this.#receive(adapter, message);
      prefix = attachmentNoticeText(received);
      await order.previous;
      let shown = "";
      const streams = this.#streaming.has(adapter.name) && canStreamReplies(adapter);
      const turn = this.#options.sessions.handle({
        inbound: message,
        ...(received === undefined ? {} : { attachments: received }),
        ...(streams
          ? {
              stream: true,
              onTextDelta: (delta: string) => {
                shown += delta;
                try {
                  stream ??= adapter.startReplyStream({
                    sessionKey: message.sessionKey,
                    text: `${prefix}${shown}`,
                    inReplyTo: message,
                  });
                  stream.update(`${prefix}${shown}`);
                } catch (error) {
                  log.warn({ err: error }, "updating the streamed reply failed");
                }
              },
            }
          : {}),
        // Said mid-turn (an approval question), as a message of its own in the same conversation.
        notify: (note, buttons) =>
          adapter.send({
            sessionKey: message.sessionKey,
            text: note,
            inReplyTo: message,
            ...(buttons === undefined ? {} : { buttons }),
          }),
      });
      order.queued();
      text = (await turn).text;
    } catch (error) {
      const level = isAlmanacError(error) && error.category === "user" ? "info" : "error";
      log[level]({ err: error }, "turn failed");
      text = failureText(error);
    } finally {
      await stopTyping?.().catch(() => {});
    }
    // What the person finally reads: exactly the reply (with its compaction notice, or the failure's words), under
    // the attachment notices; a stream is finished with the same text a plain send would have posted.
    text = `${prefix}${text}`;
    if (text.trim() === "") text = "(no answer)";
    try {
      if (stream !== undefined) await stream.finish(text);
      else await adapter.send({ sessionKey: message.sessionKey, text, inReplyTo: message });
    } catch (error) {
      log.error({ err: error }, "sending the reply failed");
    }
  }

  /** The message's images and attachments, taken before its turn; undefined when it has none (or no intake). */
  async #receive(
    adapter: ChannelAdapter,
    message: InboundMessage,
  ): Promise<readonly ReceivedAttachment[] | undefined> {
    const intake = this.#options.attachments;
    if (intake === undefined) return undefined;
    if ((message.images ?? []).length === 0 && (message.attachments ?? []).length === 0) return undefined;
    const download: AttachmentDownload | undefined = canDownloadAttachments(adapter)
      ? (attachment, limits) => adapter.downloadAttachment(message, attachment, limits)
      : undefined;
    return intake.receive(message, download, this.#stopping.signal);
  }
}

/** Creates the hub; `start()` connects every adapter. */
export function createChannelHub(options: ChannelHubOptions): ChannelHub {
  return new ChannelHub(options);
}
