import type { RollingSummary, WorkingMemory } from "@almanac/agent";
import { hasMark, type Message, withMark } from "@almanac/core";

/** Every reason a compaction runs for (the summarizer's journal validates reasons against it). */
export const compactionReasons = ["auto", "command", "overflow"] as const;

/** Why a compaction ran: automatically before a step, by `/compact`, or after a context-length error. */
export type CompactionReason = (typeof compactionReasons)[number];

/**
 * The messages one compaction takes out of the prompt, as the journal receives them before the compaction
 * is committed. The same object travels on to the summarizer queue (with the session key beside it).
 */
export interface CompactedBatch {
  readonly reason: CompactionReason;
  /** The messages leaving the prompt, in order, with their content as memory held it before this compaction. */
  readonly messages: readonly Message[];
  /** The new rolling summary that replaces them. */
  readonly summary: string;
  /** Milliseconds since the epoch (the compactor's clock). */
  readonly createdAt: number;
}

/**
 * Durably records a batch before it is committed. If it throws, the compaction is aborted and nothing is
 * marked; dropping old compacted messages from memory relies on every batch having been journaled.
 */
export type CompactionJournal = (batch: CompactedBatch) => Promise<void>;

/**
 * Finds messages as they were first said, by id (absent ids are not known). The compactor asks it for
 * messages that reach the journal shortened (`compressed` mark) without an original it kept itself.
 */
export type OriginalsLookup = (ids: readonly string[]) => Promise<ReadonlyMap<string, Message>>;

/** The changes one compaction makes to memory. */
export interface CompactionCommit {
  /** Shortened versions (same ids, `compressed` mark) of messages that stay in the prompt. */
  readonly replacements: ReadonlyMap<string, Message>;
  /** Ids of messages that leave the prompt (`compacted` mark, original content kept). */
  readonly compacted: ReadonlySet<string>;
  /** The new rolling summary; absent when only cheap passes ran. */
  readonly summary?: RollingSummary;
  /** Keep at most this many compacted messages in memory; `undefined` keeps all. */
  readonly retainCompacted: number | undefined;
}

/**
 * How many of the oldest messages can be dropped: a prefix made only of compacted messages, leaving at least
 * `retain` compacted messages, and never ending between a tool call and its results.
 */
function droppablePrefix(messages: readonly Message[], retain: number): number {
  let compacted = 0;
  for (const message of messages) if (hasMark(message, "compacted")) compacted += 1;
  let excess = compacted - retain;
  let end = 0;
  while (excess > 0 && end < messages.length && hasMark(messages[end] as Message, "compacted")) {
    end += 1;
    excess -= 1;
  }
  // Results belong with their call: drop them too, or keep the call (back off) if they cannot be dropped.
  while (end < messages.length && messages[end]?.role === "tool") {
    if (hasMark(messages[end] as Message, "compacted")) end += 1;
    else {
      while (end > 0 && messages[end]?.role === "tool") end -= 1;
      break;
    }
  }
  return end;
}

/**
 * Applies a compaction to memory in one step: marks, replacements, the new summary, then the retention drop.
 * Works on memory's current messages by id, so a message appended meanwhile is left as it is.
 * Returns how many old compacted messages were dropped.
 */
export function commitCompaction(memory: WorkingMemory, commit: CompactionCommit): number {
  let messages = memory.messages.map((message) => {
    if (commit.compacted.has(message.id)) return withMark(message, "compacted");
    return commit.replacements.get(message.id) ?? message;
  });
  let dropped = 0;
  if (commit.retainCompacted !== undefined) {
    dropped = droppablePrefix(messages, commit.retainCompacted);
    messages = messages.slice(dropped);
  }
  memory.replaceMessages(messages);
  if (commit.summary !== undefined) memory.setSummary(commit.summary);
  return dropped;
}
