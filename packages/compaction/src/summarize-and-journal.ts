import type { WorkingMemory } from "@almanac/agent";
import { describeError, hasMark, InternalError, type Message } from "@almanac/core";
import type { CompactionReason } from "./commit-compaction.js";
import type { CompactionPlan } from "./compaction-plan.js";
import type { CompactorOptions, ResolvedCompactorOptions } from "./compactor-options.js";
import { type SummaryOutcome, summarizeMessages } from "./summarize.js";

/** What {@link summarizeAndJournal} needs besides the memory and the plan. */
export interface SummaryContext {
  readonly options: CompactorOptions;
  readonly resolved: ResolvedCompactorOptions;
  /** The provider/our-count ratio, to size the summary request in our tokens. */
  readonly ratio: number;
  readonly reason: CompactionReason;
  /** What `/compact <focus>` asked the summary to focus on. */
  readonly focus: string | undefined;
  readonly signal: AbortSignal | undefined;
  /** Originals the compactor kept of messages the cheap passes shortened earlier, by id. */
  readonly originals: ReadonlyMap<string, Message>;
}

/**
 * The summarizing phase of a compaction: writes the new rolling summary of the plan's leaving messages, then
 * hands those messages, as they were said, to the journal. Memory is not changed; the caller commits after.
 * Throws `compaction.journal_failed` when the journal fails, so nothing is committed then.
 */
export async function summarizeAndJournal(
  memory: WorkingMemory,
  plan: CompactionPlan,
  context: SummaryContext,
): Promise<SummaryOutcome> {
  const summary = await summarize(memory, plan, context);
  const messages = await originalsOf(
    plan.active.filter((message) => plan.leavingIds.has(message.id)),
    context,
  );
  try {
    await context.options.journal?.({
      reason: context.reason,
      messages,
      summary: summary.text,
      createdAt: context.resolved.clock(),
    });
  } catch (error) {
    throw new InternalError(
      "compaction.journal_failed",
      `The compaction journal failed, so nothing was compacted: ${describeError(error)}`,
      { cause: error },
    );
  }
  return summary;
}

function summarize(
  memory: WorkingMemory,
  plan: CompactionPlan,
  context: SummaryContext,
): Promise<SummaryOutcome> {
  const { options, resolved } = context;
  const windows = [options.summaryModel, options.fallbackModel].map(
    (model) => model?.contextWindow ?? options.contextWindow,
  );
  // 10% slack and a ratio of at least 1: a summary request that does not fit is a wasted call.
  const room = (Math.min(...windows) - resolved.summaryMaxTokens) * 0.9;
  return summarizeMessages(
    {
      previousSummary: memory.summary?.text,
      messages: plan.parts.toSummarize,
      turnPrefix: plan.parts.turnPrefix,
      calls: plan.calls,
      focus: context.focus,
    },
    {
      counter: options.tokenCounter,
      summaryModel: options.summaryModel,
      fallbackModel: options.fallbackModel,
      maxOutputTokens: resolved.summaryMaxTokens,
      inputBudget: Math.floor(room / Math.max(1, context.ratio)),
      timeoutMs: options.summaryTimeoutMs,
      renderMaxChars: 4_000,
      logger: resolved.logger,
      signal: context.signal,
    },
  );
}

/**
 * The messages as they were said: the original the compactor kept, else (a message shortened before it
 * existed, e.g. before a restart) the one `options.originals` finds, else the message as memory holds it.
 */
async function originalsOf(messages: readonly Message[], context: SummaryContext): Promise<Message[]> {
  const kept = context.originals;
  const { options } = context;
  const missing = messages
    .filter((message) => !kept.has(message.id) && hasMark(message, "compressed"))
    .map((message) => message.id);
  let found: ReadonlyMap<string, Message> = new Map();
  if (missing.length > 0 && options.originals) {
    try {
      found = await options.originals(missing);
    } catch (error) {
      context.resolved.logger.warn(
        { messages: missing.length, error: describeError(error) },
        "could not look up the originals of shortened messages; journaling them shortened",
      );
    }
  }
  return messages.map((message) => kept.get(message.id) ?? found.get(message.id) ?? message);
}
