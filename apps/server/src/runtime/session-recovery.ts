import { WorkingMemory } from "@almanac/agent";
import { describeError, type Logger, type Message, parseSessionKey, repairToolPairs } from "@almanac/core";
import type { MissingOrMovedAside, Session } from "../sessions/session.js";
import type { SessionSnapshot, SessionStats } from "../sessions/session-snapshot.js";
import { transcriptFacts } from "../sessions/transcript-facts.js";
import { CHECKPOINT_TURNS } from "./session-checkpoint.js";

/** A stored snapshot whose working memory could be restored. */
export interface UsableSnapshot {
  readonly status: "ok";
  readonly snapshot: SessionSnapshot;
  readonly memory: WorkingMemory;
  /** Messages the transcript got after the snapshot was written: the turn the previous process died in. */
  readonly unseen: readonly Message[];
  /** The transcript is shorter than the snapshot records: it may lack messages the snapshot holds. */
  readonly transcriptBehind: boolean;
}

/** No snapshot, or one that was moved aside as unusable. */
export type UnusableSnapshot = MissingOrMovedAside;

/** A session's state as its transcript tells it. */
export interface RecoveredState {
  readonly createdAt: number;
  readonly memory: WorkingMemory;
  readonly stats: SessionStats;
  /** False when there was no transcript either: a new, empty session (nothing worth saving yet). */
  readonly fromTranscript: boolean;
}

/** Reads a session's snapshot; one whose working memory cannot be restored is moved aside like a corrupt one. */
export async function readUsableSnapshot(session: Session): Promise<UsableSnapshot | UnusableSnapshot> {
  const result = await session.load();
  if (result.status !== "ok") return result;
  try {
    return {
      status: "ok",
      snapshot: result.snapshot,
      memory: WorkingMemory.fromJSON(result.snapshot.memory),
      unseen: result.unseen,
      transcriptBehind: result.transcriptBehind,
    };
  } catch (error) {
    return session.moveAside(`its working memory is unusable (${describeError(error)})`);
  }
}

/** True when the session has at least one readable transcript line. */
export async function hasTranscript(session: Session): Promise<boolean> {
  for await (const _message of session.history()) return true;
  return false;
}

/**
 * The state of a session without a usable snapshot, from its transcript (the source of truth): every
 * message, and the stats the transcript tells (turns, first and last activity). What it cannot tell (the
 * rolling summary, compaction marks and counters) starts over. Logs what it did.
 */
export function recoverFromTranscript(options: {
  readonly key: string;
  readonly channel: string | undefined;
  readonly snapshot: UnusableSnapshot;
  readonly transcript: readonly Message[];
  readonly now: number;
  readonly logger: Logger;
}): RecoveredState {
  const { key, snapshot, now, logger } = options;
  const messages = repairToolPairs([...options.transcript]);
  const facts = transcriptFacts(messages);
  const stats = (turns: number, lastActivity: number): SessionStats => ({
    turns,
    compactions: 0,
    lastActivity,
    channel: options.channel ?? parseSessionKey(key).channel,
  });
  const why =
    snapshot.status === "corrupt"
      ? { reason: snapshot.reason, movedTo: snapshot.movedTo }
      : { reason: "the snapshot is missing" };
  if (facts === undefined) {
    if (snapshot.status === "corrupt")
      logger.warn(
        { sessionKey: key, ...why },
        "session snapshot was unusable and there is no transcript to rebuild it from; starting it empty",
      );
    return { createdAt: now, memory: new WorkingMemory(), stats: stats(0, now), fromTranscript: false };
  }
  const fields = { sessionKey: key, ...why, messages: messages.length, turns: facts.turns };
  // A new session writes its first snapshot with its first checkpoint, not with its first turn: a young
  // session found without one after a restart is expected.
  if (snapshot.status === "missing" && facts.turns < CHECKPOINT_TURNS)
    logger.info(fields, "loading a new session from its transcript (its first snapshot was not due yet)");
  else logger.warn(fields, "rebuilding session from its transcript");
  return {
    createdAt: facts.createdAt,
    memory: new WorkingMemory({ messages }),
    stats: stats(facts.turns, facts.lastActivity),
    fromTranscript: true,
  };
}
