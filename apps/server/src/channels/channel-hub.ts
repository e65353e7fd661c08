import {
  type ChannelAdapter,
  type ChannelStatus,
  hasTypingIndicator,
  type InboundMessage,
  isAlmanacError,
  type Logger,
  type OutboundMessage,
  parseSessionKey,
  silentLogger,
} from "@almanac/core";
import { textForPeople } from "../errors/error-codes.js";
import type { SessionManager } from "../runtime/session-manager.js";
import { type AccessPolicy, checkAccess } from "./access-policy.js";
import type { DedupStore } from "./dedup-store.js";

/** One configured channel: the adapter and who may use it. */
export interface ChannelEntry {
  readonly adapter: ChannelAdapter;
  readonly policy: AccessPolicy;
}

/** Options of {@link createChannelHub}. */
export interface ChannelHubOptions {
  readonly channels: readonly ChannelEntry[];
  /** Names of channels known to Almanac but not configured (reported as `disabled`). */
  readonly disabled: readonly string[];
  readonly dedup: DedupStore;
  readonly sessions: SessionManager;
  readonly logger?: Logger;
}

/** Runs every chat-platform adapter: gate (dedup, access), session turn, reply. */
export interface ChannelHub {
  start(): Promise<void>;
  statuses(): ChannelStatus[];
  /** Stops the adapters after replies already being sent went out (up to the deadline). */
  stop(deadlineMs: number): Promise<void>;
  /**
   * Sends a message to a conversation nobody just wrote in (a scheduled task's reply, a question of the
   * assistant's), by its session key. False when the conversation is not on a chat app configured here (the
   * console's and the API's conversations get it through their transcript and the live events).
   */
  deliver(message: OutboundMessage): Promise<boolean>;
  /**
   * True when a send to this conversation that began at `since` may be repeated now with the same key without a
   * duplicate (the platform deduplicates, and still does after that long).
   */
  canRepeatSend(sessionKey: string, since: number): boolean;
}

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

/** Creates the hub; `start()` connects every adapter. */
export function createChannelHub(options: ChannelHubOptions): ChannelHub {
  const logger = options.logger ?? silentLogger;
  const inFlight = new Set<Promise<void>>();
  const policies = new Map(options.channels.map((entry) => [entry.adapter.name, entry.policy]));
  const adapters = new Map(options.channels.map((entry) => [entry.adapter.name, entry.adapter]));

  async function process(adapter: ChannelAdapter, message: InboundMessage): Promise<void> {
    const log = logger.child({
      channel: adapter.name,
      sessionKey: message.sessionKey,
      messageId: message.id,
    });
    if (!(await options.dedup.firstSeen(`${adapter.name}:${message.account}:${message.id}`))) {
      log.info({}, "dropped a redelivered event");
      return;
    }
    const policy = policies.get(adapter.name);
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
    let text: string;
    try {
      text = (
        await options.sessions.handle({
          inbound: message,
          // Said mid-turn (an approval question), as a message of its own in the same conversation.
          notify: (note, buttons) =>
            adapter.send({
              sessionKey: message.sessionKey,
              text: note,
              inReplyTo: message,
              ...(buttons === undefined ? {} : { buttons }),
            }),
        })
      ).text;
    } catch (error) {
      const level = isAlmanacError(error) && error.category === "user" ? "info" : "error";
      log[level]({ err: error }, "turn failed");
      text = failureText(error);
    } finally {
      await stopTyping?.().catch(() => {});
    }
    if (text.trim() === "") text = "(no answer)";
    try {
      await adapter.send({ sessionKey: message.sessionKey, text, inReplyTo: message });
    } catch (error) {
      log.error({ err: error }, "sending the reply failed");
    }
  }

  return {
    async start() {
      await Promise.all(
        [...adapters.values()].map(async (adapter) => {
          try {
            await adapter.start((message) => {
              // Adapters must ack the platform at once: the turn runs detached from the callback.
              const task = process(adapter, message).catch((error: unknown) =>
                logger.error({ err: error, channel: adapter.name }, "channel message handling failed"),
              );
              inFlight.add(task);
              void task.finally(() => inFlight.delete(task));
            });
            logger.info({ channel: adapter.name }, "channel started");
          } catch (error) {
            logger.error(
              { err: error, channel: adapter.name },
              "channel failed to start; see GET /api/channels",
            );
          }
        }),
      );
    },
    statuses() {
      return [
        ...[...adapters.values()].map((adapter) => adapter.status()),
        ...options.disabled.map(
          (channel): ChannelStatus => ({ channel, state: "disabled", detail: "not configured" }),
        ),
      ];
    },
    async deliver(message) {
      const adapter = adapters.get(channelOf(message.sessionKey));
      if (adapter === undefined) return false;
      await adapter.send(message);
      return true;
    },
    canRepeatSend(sessionKey, since) {
      const adapter = adapters.get(channelOf(sessionKey));
      if (adapter === undefined) return true;
      const window = adapter.idempotencyWindowMs ?? Number.POSITIVE_INFINITY;
      return adapter.idempotentSends === true && Date.now() - since < window;
    },
    async stop(deadlineMs) {
      const deadline = new Promise<void>((resolve) => setTimeout(resolve, deadlineMs).unref());
      await Promise.race([Promise.allSettled([...inFlight]), deadline]);
      await Promise.allSettled([...adapters.values()].map((adapter) => adapter.stop()));
    },
  };
}
