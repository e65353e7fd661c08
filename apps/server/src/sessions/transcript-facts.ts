import type { Message } from "@almanac/core";

/** What a session's transcript alone tells about it: enough to rebuild or list a session whose snapshot is lost. */
export interface TranscriptFacts {
  /** Timestamp of the first message (ms since the epoch). */
  readonly createdAt: number;
  /** Latest message timestamp (ms since the epoch). */
  readonly lastActivity: number;
  /** User messages that got an assistant message before the next user message (completed turns). */
  readonly turns: number;
  readonly messageCount: number;
}

/**
 * Derives {@link TranscriptFacts} from a transcript's messages (oldest first); undefined when there are none.
 * The one rule for it: the session manager rebuilds snapshots with it and the store lists with it.
 */
export function transcriptFacts(messages: readonly Message[]): TranscriptFacts | undefined {
  const first = messages[0];
  if (first === undefined) return undefined;
  let turns = 0;
  let awaitingReply = false;
  let lastActivity = first.timestamp;
  for (const message of messages) {
    lastActivity = Math.max(lastActivity, message.timestamp);
    if (message.role === "user") awaitingReply = true;
    else if (message.role === "assistant" && awaitingReply) {
      turns += 1;
      awaitingReply = false;
    }
  }
  return {
    createdAt: first.timestamp,
    lastActivity,
    turns,
    messageCount: messages.length,
  };
}
