import type { WorkingMemory } from "@almanac/agent";
import { compactionCounters } from "@almanac/compaction";
import type { Message } from "@almanac/core";

/**
 * Turns whose messages may sit in the transcript only (past the snapshot's recorded size) before the snapshot
 * is written again. A turn that only appended messages costs one transcript append then, not a rewrite of the
 * whole snapshot; loading replays at most this many turns from the transcript. Anything else a turn changed
 * (compaction, the summary, marks, repairs, counters) is written with the turn.
 */
export const CHECKPOINT_TURNS = 16;

/** The state a snapshot was written from. */
export interface Checkpoint {
  readonly messages: readonly Message[];
  readonly summary: unknown;
  readonly counters: Readonly<Record<string, number>>;
  /** Turns that ended since, with their messages in the transcript only. */
  readonly turnsSince: number;
}

/** The checkpoint of `memory` as it is now (just written). */
export function checkpointOf(memory: WorkingMemory): Checkpoint {
  return { messages: memory.messages, summary: memory.summary, counters: memory.counters, turnsSince: 0 };
}

/** True when `memory` differs from the checkpoint only by messages appended after its own. */
export function onlyAppended(saved: Checkpoint, memory: WorkingMemory): boolean {
  if (memory.summary !== saved.summary) return false;
  const { messages } = memory;
  if (messages.length < saved.messages.length) return false;
  // Indexed: `entries()` would make an [index, message] pair for each of the history's messages every turn.
  for (let index = 0; index < saved.messages.length; index += 1)
    if (messages[index] !== saved.messages[index]) return false;
  // The provider ratio is re-learnt from the next reported usage: a crash losing its last updates costs nothing.
  const { counters } = memory;
  const names = new Set([...Object.keys(counters), ...Object.keys(saved.counters)]);
  for (const name of names)
    if (name !== compactionCounters.tokenRatio && counters[name] !== saved.counters[name]) return false;
  return true;
}
