import type { WorkingMemory } from "@almanac/agent";
import type { Message, TokenCounter, ToolCallBlock } from "@almanac/core";
import { compressOldMessages, cutGiantOutputs, indexToolCalls, type PassStats } from "./cheap-passes.js";
import type { CompactionReason } from "./commit-compaction.js";
import {
  commandKeepBudget,
  keepBudget,
  passLimits,
  type ResolvedCompactorOptions,
} from "./compactor-options.js";
import { isCompactedIndex, type SplitParts, splitForCompaction, splitParts } from "./split-turns.js";

/**
 * What one compaction would do to the prompt, before anything is committed: the cheap passes applied and
 * the split into what leaves the prompt and what stays. Planning never touches memory.
 */
export interface CompactionPlan {
  /** The uncompacted messages as memory holds them, before any pass. */
  readonly active: readonly Message[];
  /** Every tool call in memory by id (to name the tool a result answers). */
  readonly calls: ReadonlyMap<string, ToolCallBlock>;
  /** `active` after the cheap passes: same ids in the same order, changed messages marked `compressed`. */
  readonly compressed: readonly Message[];
  readonly passes: readonly PassStats[];
  /** `compressed`, split into the part to summarize, the turn prefix and the kept tail. */
  readonly parts: SplitParts;
  /** The messages that leave the prompt if it is summarized: the summarized part, then the turn prefix. */
  readonly leaving: readonly Message[];
  readonly leavingIds: ReadonlySet<string>;
}

/** What {@link planCompaction} needs besides the memory. */
export interface PlanContext {
  readonly resolved: ResolvedCompactorOptions;
  readonly counter: TokenCounter;
  /** The provider/our-count ratio: limits are set in our tokens, the threshold is in the provider's. */
  readonly ratio: number;
  readonly reason: CompactionReason;
}

/** Runs the cheap passes over memory's uncompacted messages and chooses what a summary would replace. */
export function planCompaction(memory: WorkingMemory, context: PlanContext): CompactionPlan {
  const { resolved, counter, reason } = context;
  const rawThreshold = resolved.threshold.threshold / context.ratio;
  const limits = passLimits(resolved, rawThreshold);
  const active = memory.activeMessages();
  const calls = indexToolCalls(memory.messages);
  const passContext = { counter, calls, toolSummaries: resolved.toolSummaries };

  // Giant outputs are cut first (even recent ones), so the split sees their real cost.
  const giant = cutGiantOutputs(active, passContext, limits);
  const tokens = giant.messages.map((message) => counter.countMessage(message));
  const normalBudget = keepBudget(resolved, rawThreshold, reason === "overflow");
  const budget =
    reason === "command"
      ? commandKeepBudget(
          normalBudget,
          tokens.reduce((sum, count) => sum + count, 0),
        )
      : normalBudget;
  const split = splitForCompaction(giant.messages, tokens, budget);
  const old = compressOldMessages(
    giant.messages,
    (index) => isCompactedIndex(split, index),
    passContext,
    limits,
  );
  const parts = splitParts(old.messages, split);
  const leaving = [...parts.toSummarize, ...parts.turnPrefix];
  return {
    active,
    calls,
    compressed: old.messages,
    passes: [giant.stats, ...old.stats],
    parts,
    leaving,
    leavingIds: new Set(leaving.map((message) => message.id)),
  };
}

/** Shortened versions of the messages that stay in the prompt (`staying`), by id, to commit. */
export function replacementsOf(
  plan: CompactionPlan,
  staying: (message: Message) => boolean,
): Map<string, Message> {
  const replacements = new Map<string, Message>();
  for (const [index, message] of plan.compressed.entries()) {
    if (message !== plan.active[index] && staying(message)) replacements.set(message.id, message);
  }
  return replacements;
}
