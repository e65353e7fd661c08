import type { Logger, Message, TokenCounter } from "@almanac/core";
import { openSession, type Session, type SessionStore } from "../sessions/session.js";
import { Conversation, originalsFromTranscript, type SessionState } from "./conversation.js";
import {
  hasTranscript,
  readUsableSnapshot,
  recoverFromTranscript,
  type UnusableSnapshot,
} from "./session-recovery.js";
import type { SessionLifecycle } from "./session-types.js";
import type { TurnRunner } from "./turn-runner.js";

/** Options of {@link createSessionLoader}. */
export interface SessionLoaderOptions {
  readonly store: SessionStore;
  /** Absent when no model is configured: conversations then have no compactor and no tools. */
  readonly runner: TurnRunner | undefined;
  readonly tokenCounter: TokenCounter;
  readonly contextWindow: number;
  readonly lifecycle: SessionLifecycle | undefined;
  readonly clock: () => number;
  readonly logger: Logger;
}

/** A session loaded for its turns, and whether it is new (nothing stored yet). */
export interface LoadedConversation {
  readonly conversation: Conversation;
  readonly created: boolean;
}

/**
 * Turns stored sessions into {@link Conversation}s: reads the snapshot, restores turns the transcript has
 * past it, rebuilds from the transcript (the source of truth) when the snapshot is missing or unusable.
 * Crash safety: before the model is called the user's message is in the transcript (written; fsynced shortly
 * after or with the turn's end, see `AppendDurability`); transcript lines
 * past the snapshot's recorded size are turns that ended after it or the turn the process died in. They are
 * restored, and tool calls left without results get explicit error results. (Snapshots of earlier versions
 * marked an interrupted turn with `openTurn`; those are still reconciled.)
 */
export interface SessionLoader {
  /** The session's conversation, with its state repaired and saved when the previous process left it behind. */
  load(key: string, channel: string | undefined): Promise<LoadedConversation>;
  /**
   * The session as stored, for reading only, when its snapshot is current; "load" when it must be loaded
   * (repaired or rebuilt) first; undefined when there is no such session.
   */
  peek(key: string): Promise<Conversation | "load" | undefined>;
  /** The stored session of `key` (no I/O). */
  session(key: string): Session;
}

/** Creates the {@link SessionLoader} of a session manager. */
export function createSessionLoader(options: SessionLoaderOptions): SessionLoader {
  const { store, clock, logger } = options;

  async function systemPromptFor(key: string): Promise<string> {
    const runner = options.runner;
    if (!runner) return "";
    let context = "";
    try {
      context = (await options.lifecycle?.sessionContext?.(key, runner.memoryRoom(key))) ?? "";
    } catch (error) {
      logger.warn(
        { err: error, sessionKey: key },
        "could not load the memory excerpt; the session starts without it",
      );
    }
    return runner.systemPrompt(context);
  }

  /** The session's conversation: its system prompt (with the memory excerpt of this moment) and compactor. */
  async function open(session: Session, state: SessionState, checkpointed: boolean): Promise<Conversation> {
    const runner = options.runner;
    return new Conversation({
      session,
      state,
      checkpointed,
      systemPrompt: await systemPromptFor(session.key),
      compactor: runner?.compactorFor(session.key, (ids) => originalsFromTranscript(session, ids)),
      toolSpecs: runner?.toolSpecs(session.key) ?? [],
      tokenCounter: options.tokenCounter,
      contextWindow: options.contextWindow,
      clock,
      logger,
    });
  }

  async function historyOf(session: Session): Promise<Message[]> {
    const messages: Message[] = [];
    for await (const message of session.history()) messages.push(message);
    return messages;
  }

  /** A session without a usable snapshot: rebuilt from its transcript and saved (or new, when there is none). */
  async function rebuild(
    session: Session,
    channel: string | undefined,
    snapshot: UnusableSnapshot,
  ): Promise<LoadedConversation> {
    const { fromTranscript, ...state } = recoverFromTranscript({
      key: session.key,
      channel,
      snapshot,
      transcript: await historyOf(session),
      now: clock(),
      logger,
    });
    const created = !fromTranscript && snapshot.status === "missing";
    // A new session's empty state is what its (absent) files hold: its first turns only append to the
    // transcript, and its first snapshot is written with the checkpoint that follows them (see
    // CHECKPOINT_TURNS), as any session's. Until then a restart rebuilds it from the transcript, losing
    // nothing. Writing it with the first turn cost 100 sessions starting at once one more fsync each.
    const conversation = await open(session, state, created);
    if (fromTranscript) await conversation.save();
    return { conversation, created };
  }

  return {
    async load(key, channel) {
      const session = openSession(store, key);
      const result = await readUsableSnapshot(session);
      if (result.status !== "ok") return rebuild(session, channel, result);
      const { snapshot, memory } = result;
      const { openTurn, ...stats } = snapshot.stats;
      const conversation = await open(session, { createdAt: snapshot.createdAt, memory, stats }, true);
      if (openTurn !== undefined) {
        // Written by an earlier version: the turn opened with `inputId` was cut short.
        const transcript = await historyOf(session);
        const start = transcript.findIndex((message) => message.id === openTurn.inputId);
        await conversation.catchUp(start === -1 ? [] : transcript.slice(start + 1), transcript);
      } else if (result.transcriptBehind) {
        await conversation.catchUp([], await historyOf(session));
      } else if (result.unseen.length > 0) {
        await conversation.catchUp(result.unseen, undefined);
      }
      return { conversation, created: false };
    },

    async peek(key) {
      const session = openSession(store, key);
      const result = await readUsableSnapshot(session);
      if (result.status !== "ok") return (await hasTranscript(session)) ? "load" : undefined;
      const current =
        result.unseen.length === 0 &&
        !result.transcriptBehind &&
        result.snapshot.stats.openTurn === undefined;
      if (!current) return "load";
      const state = {
        createdAt: result.snapshot.createdAt,
        memory: result.memory,
        stats: result.snapshot.stats,
      };
      return open(session, state, false);
    },

    session: (key) => openSession(store, key),
  };
}
