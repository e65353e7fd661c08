import type { EventBus } from "../events/event-bus.js";
import type { StatsJournal } from "./stats-journal.js";

/**
 * Keeps the chart history of every session from the server's event bus: each finished reply (its context
 * size after the turn), each compaction (tokens before and after), each reset or delete. Returns the
 * function that stops listening.
 */
export function recordServerEvents(
  bus: EventBus,
  journal: StatsJournal,
  clock: () => number = Date.now,
): () => void {
  // Not a watcher: recording history must not switch on the live console's status sampling.
  return bus.subscribe(
    ({ event }) => {
      switch (event.type) {
        case "turn-finished":
          // An error turn added nothing the next request carries; a stopped one kept its partial reply.
          if (event.kind !== "reply" || event.outcome === "error" || event.session === undefined) return;
          journal.recordTurn({
            sessionKey: event.sessionKey,
            turn: event.session.turns,
            at: clock(),
            contextTokens: event.session.contextTokens,
            promptTokens: event.usage.promptTokens,
            completionTokens: event.usage.completionTokens,
          });
          return;
        case "session-compacted":
          journal.recordCompaction({
            sessionKey: event.sessionKey,
            at: clock(),
            reason: event.reason,
            tokensBefore: event.tokensBefore,
            tokensAfter: event.tokensAfter,
          });
          return;
        case "session-reset":
        case "session-deleted":
          journal.recordReset(event.sessionKey);
          return;
        default:
          return;
      }
    },
    { watching: false },
  );
}
