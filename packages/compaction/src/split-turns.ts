import type { Message } from "@almanac/core";

/** How much of the recent conversation stays verbatim. */
export interface KeepRecentBudget {
  /** Token budget of the kept tail. */
  readonly budget: number;
  /** The tail grows past `budget` until it has this many messages, as long as it stays within `maxTokens`. */
  readonly minMessages: number;
  /** Hard limit for growing the tail to reach `minMessages`. */
  readonly maxTokens: number;
}

/**
 * `[system] [to summarize] [turn prefix] [kept recent]` as index ranges over the uncompacted messages.
 * `summarize` is `[0, summarizeEnd)`; the turn prefix is `[prefixStart, prefixEnd)` (empty when unused);
 * everything else is kept. With a turn prefix the kept messages are the current user request
 * (at `prefixStart − 1`) and `[prefixEnd, length)`.
 */
export interface CompactionSplit {
  readonly summarizeEnd: number;
  readonly prefixStart: number;
  readonly prefixEnd: number;
  readonly length: number;
}

/** The messages of each part of a split. */
export interface SplitParts {
  readonly toSummarize: readonly Message[];
  readonly turnPrefix: readonly Message[];
  readonly kept: readonly Message[];
}

function lastUserIndex(messages: readonly Message[]): number {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    if (messages[index]?.role === "user") return index;
  }
  return -1;
}

function suffixSums(tokens: readonly number[]): number[] {
  const sums = new Array<number>(tokens.length + 1).fill(0);
  for (let index = tokens.length - 1; index >= 0; index -= 1) {
    sums[index] = (sums[index + 1] ?? 0) + (tokens[index] ?? 0);
  }
  return sums;
}

/** Whether a tail grown to `tokens` / `count` is still acceptable under the budget rules. */
function fits(tokens: number, count: number, currentCount: number, keep: KeepRecentBudget): boolean {
  if (tokens <= keep.budget) return true;
  return currentCount < keep.minMessages && tokens <= keep.maxTokens && count > currentCount;
}

/**
 * Chooses what to summarize and what to keep, by tokens (`tokens[i]` is the cost of `messages[i]`).
 *
 * Cuts only before a user message, so a tool call never leaves its result and a request never leaves its
 * reply. The latest user message is always kept. When the current turn alone is over budget (one request,
 * many tool rounds), its early rounds become the turn prefix: whole rounds (an assistant message and the
 * tool results after it), never a call without its result, while the request itself stays verbatim.
 */
export function splitForCompaction(
  messages: readonly Message[],
  tokens: readonly number[],
  keep: KeepRecentBudget,
): CompactionSplit {
  const length = messages.length;
  const after = suffixSums(tokens);
  const lastUser = lastUserIndex(messages);
  const turnStart = Math.max(lastUser, 0);
  if ((after[turnStart] ?? 0) > keep.budget) {
    // The current turn is over budget: keep the request and as many of its latest rounds as fit.
    const requestTokens = lastUser >= 0 ? (tokens[lastUser] ?? 0) : 0;
    const requestCount = lastUser >= 0 ? 1 : 0;
    const firstRound = lastUser + 1;
    let keepFrom = length;
    for (let index = length - 1; index >= firstRound; index -= 1) {
      if (messages[index]?.role === "tool") continue;
      if (keepFrom === length) {
        keepFrom = index; // the latest round is always kept, whatever its size
        continue;
      }
      const grown = requestTokens + (after[index] ?? 0);
      if (!fits(grown, requestCount + length - index, requestCount + length - keepFrom, keep)) break;
      keepFrom = index;
    }
    if (keepFrom > firstRound && keepFrom < length) {
      return { summarizeEnd: turnStart, prefixStart: firstRound, prefixEnd: keepFrom, length };
    }
  }

  let cut = turnStart;
  for (let index = turnStart - 1; index >= 0; index -= 1) {
    if (messages[index]?.role !== "user") continue;
    if (!fits(after[index] ?? 0, length - index, length - cut, keep)) break;
    cut = index;
  }
  return { summarizeEnd: cut, prefixStart: cut, prefixEnd: cut, length };
}

/** Slices the messages a split was computed on into its parts. */
export function splitParts(messages: readonly Message[], split: CompactionSplit): SplitParts {
  return {
    toSummarize: messages.slice(0, split.summarizeEnd),
    turnPrefix: messages.slice(split.prefixStart, split.prefixEnd),
    kept: [...messages.slice(split.summarizeEnd, split.prefixStart), ...messages.slice(split.prefixEnd)],
  };
}

/** True when the message at `index` is outside the kept tail (summarized or in the turn prefix). */
export function isCompactedIndex(split: CompactionSplit, index: number): boolean {
  return index < split.summarizeEnd || (index >= split.prefixStart && index < split.prefixEnd);
}
