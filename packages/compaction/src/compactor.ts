import type { BeforeModelCall, WorkingMemory } from "@almanac/agent";
import {
  describeError,
  hasMark,
  InternalError,
  type Message,
  type ToolSpec,
  type Usage,
} from "@almanac/core";
import { compressOldMessages, cutGiantOutputs, indexToolCalls, type PassStats } from "./cheap-passes.js";
import { type CompactionReason, commitCompaction } from "./commit-compaction.js";
import {
  type CompactionEvent,
  type CompactionOutcome,
  type CompactionResult,
  formatCompactionNotice,
} from "./compaction-events.js";
import { createCompactionStep } from "./compaction-hook.js";
import {
  type CompactorOptions,
  commandKeepBudget,
  defaultMaxStrikes,
  keepBudget,
  passLimits,
  resolveCompactorOptions,
} from "./compactor-options.js";
import {
  type ContextMeter,
  correctTokens,
  createContextMeter,
  type PromptInput,
  type PromptMeasure,
  tokenRatioCounter,
  updateTokenRatio,
} from "./context-check.js";
import { isCompactedIndex, splitForCompaction, splitParts } from "./split-turns.js";
import { type SummaryOutcome, summarizeMessages } from "./summarize.js";
import type { ResolvedThreshold } from "./thresholds.js";

/** Names of the counters the compactor keeps in `memory.counters` (persisted with the session). */
export const compactionCounters = Object.freeze({
  /** Compactions that wrote a summary. */
  count: "compaction.count",
  /** Compactions in a row that left the prompt over the threshold. */
  strikes: "compaction.strikes",
  /** Provider prompt tokens ÷ our count, learnt from the last reported usage. */
  tokenRatio: tokenRatioCounter,
});

/** What a context check needs: the same inputs the agent's next request is built from. */
export interface CheckInput {
  readonly systemPrompt: string;
  readonly tools: readonly ToolSpec[];
  /** Usage the provider reported for the previous request of this memory, if any. */
  readonly lastUsage?: Usage | undefined;
}

/** The measured prompt and whether compaction is due. */
export interface ContextCheck {
  /** Our tokenizer's count of the would-be request (system prompt, summary, active messages, tool specs). */
  readonly countedTokens: number;
  /** The provider/our-count ratio applied. */
  readonly ratio: number;
  /** `countedTokens × ratio`, rounded up: what the provider is expected to count. */
  readonly promptTokens: number;
  readonly threshold: number;
  /** The prompt is over the threshold. */
  readonly due: boolean;
  /**
   * Most prompt tokens a request may carry: the usable window (window − output reserve) less a 5 % margin for
   * the provider's own count. Past it the provider would refuse the request.
   */
  readonly limit: number;
  /** The prompt is over {@link limit}: sending it would be refused, paused or not. */
  readonly overLimit: boolean;
  readonly strikes: number;
  /** Due, but automatic compaction is paused after too many strikes. */
  readonly suspended: boolean;
}

/** Whether automatic compaction runs for a memory, for people to read (`/status`, the session API). */
export interface CompactionState {
  /** Summarizing compactions in a row that neither got under the threshold nor made room. */
  readonly strikes: number;
  readonly maxStrikes: number;
  /** Automatic compaction is paused; only a request that would not fit the window is still compacted. */
  readonly paused: boolean;
}

/** Input of {@link Compactor.compact}. */
export interface CompactInput extends CheckInput {
  readonly reason: CompactionReason;
  /** What `/compact <focus>` asked the summary to focus on. */
  readonly focus?: string | undefined;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Context compaction. Create one per session and keep it as long as the session is loaded: besides what
 * lives in the working memory (marks, summary, counters), it remembers the originals of tool outputs the
 * cheap passes shortened, so the journal gets them when they are compacted later.
 */
export interface Compactor {
  /** The threshold numbers this compactor was configured with. */
  readonly threshold: ResolvedThreshold;
  /** The meter behind every check: use it to show the same count the compaction decision uses. */
  readonly meter: ContextMeter;
  /** The next request's size, as {@link check} counts it, without learning anything. */
  measure(memory: WorkingMemory, input: PromptInput): PromptMeasure;
  /** Strikes and whether automatic compaction is paused for this memory. */
  state(memory: WorkingMemory): CompactionState;
  /**
   * Learns the provider ratio from the usage reported for the last request checked for this memory
   * (e.g. the last step of a turn, which no later check sees). The same usage object twice teaches once.
   */
  observe(memory: WorkingMemory, usage: Usage | undefined): void;
  /**
   * Measures the next request. Also learns the provider ratio from `lastUsage` and clears the strikes once
   * the prompt is back under the threshold (both stored in `memory.counters`).
   */
  check(memory: WorkingMemory, input: CheckInput): ContextCheck;
  /**
   * Compacts now (`command` and `overflow` always summarize what they can; `auto` stops after the cheap
   * passes when those suffice). Throws `compaction.journal_failed` when the journal fails (nothing is
   * committed then) and rethrows cancellation.
   */
  compact(memory: WorkingMemory, input: CompactInput): Promise<CompactionResult>;
  /** The step to run before every model call (in the agent's `beforeModelCall` list): compacts when due. */
  readonly beforeModelCall: BeforeModelCall;
}

interface MemoryState {
  /** Our count of the last request measured for this memory (what `lastUsage` will be compared with). */
  counted: number | undefined;
  /** The usage object already learnt from (the agent passes the same one again when a step reports none). */
  usage: Usage | undefined;
  /**
   * Content before any cheap pass, of messages shortened in memory but not compacted yet, so the journal
   * gets the original. In-process only: for messages shortened before this compactor existed (a restart,
   * an unloaded session), `options.originals` looks them up (the server reads the session transcript).
   */
  readonly originals: Map<string, Message>;
}

/** The {@link CompactionState} stored in a memory's counters (for a memory not loaded with its compactor, too). */
export function compactionStateOf(
  memory: Pick<WorkingMemory, "counter">,
  maxStrikes: number = defaultMaxStrikes,
): CompactionState {
  const strikes = memory.counter(compactionCounters.strikes);
  return { strikes, maxStrikes, paused: strikes >= maxStrikes };
}

/** Creates a compactor; see docs/compaction.md. Throws `compaction.config_invalid` naming a bad option. */
export function createCompactor(options: CompactorOptions): Compactor {
  const resolved = resolveCompactorOptions(options);
  const { clock, logger, threshold } = resolved;
  const counter = options.tokenCounter;
  const meter = createContextMeter(counter);
  const promptLimit = Math.floor(threshold.usableWindow * 0.95);
  // A summarizing compaction that shrank the prompt by this much made room, over the threshold or not: the
  // turn can go on, so it is no strike. Strikes stop repeated summaries that do not help.
  const roomMade = Math.max(1, Math.floor(threshold.threshold * 0.1));
  // Keyed by the memory, which lives as long as the loaded session (and so does this compactor).
  const states = new WeakMap<WorkingMemory, MemoryState>();

  const stateOf = (memory: WorkingMemory): MemoryState => {
    let state = states.get(memory);
    if (state === undefined) {
      state = { counted: undefined, usage: undefined, originals: new Map() };
      states.set(memory, state);
    }
    return state;
  };
  const ratioOf = (memory: WorkingMemory): number => memory.counters[compactionCounters.tokenRatio] ?? 1;
  const measure = (memory: WorkingMemory, input: PromptInput, messages = memory.activeMessages()): number =>
    meter.measure(memory, input, messages).countedTokens;
  const observe = (memory: WorkingMemory, usage: Usage | undefined): void => {
    const state = stateOf(memory);
    if (usage === undefined || usage === state.usage) return;
    state.usage = usage;
    const previous = memory.counters[compactionCounters.tokenRatio];
    const learnt = updateTokenRatio(previous, usage, state.counted, resolved.ratioBounds);
    if (learnt !== previous && state.counted !== undefined)
      memory.setCounter(compactionCounters.tokenRatio, learnt);
  };
  const emit = (event: CompactionEvent): void => {
    try {
      options.onEvent?.(event);
    } catch (error) {
      logger.error({ event: event.type, error: describeError(error) }, "compaction event listener threw");
    }
  };

  const check = (memory: WorkingMemory, input: CheckInput): ContextCheck => {
    const state = stateOf(memory);
    observe(memory, input.lastUsage);
    const ratio = ratioOf(memory);
    const countedTokens = measure(memory, input);
    state.counted = countedTokens;
    const promptTokens = correctTokens(countedTokens, ratio);
    const due = promptTokens > threshold.threshold;
    let strikes = memory.counter(compactionCounters.strikes);
    if (!due && strikes > 0) {
      memory.setCounter(compactionCounters.strikes, 0);
      strikes = 0;
    }
    return {
      countedTokens,
      ratio,
      promptTokens,
      threshold: threshold.threshold,
      due,
      limit: promptLimit,
      overLimit: promptTokens > promptLimit,
      strikes,
      suspended: due && strikes >= resolved.maxStrikes,
    };
  };

  const summarize = (
    memory: WorkingMemory,
    parts: ReturnType<typeof splitParts>,
    calls: ReturnType<typeof indexToolCalls>,
    input: CompactInput,
    ratio: number,
  ): Promise<SummaryOutcome> => {
    const windows = [options.summaryModel, options.fallbackModel].map(
      (model) => model?.contextWindow ?? options.contextWindow,
    );
    // 10% slack and a ratio of at least 1: a summary request that does not fit is a wasted call.
    const room = (Math.min(...windows) - resolved.summaryMaxTokens) * 0.9;
    return summarizeMessages(
      {
        previousSummary: memory.summary?.text,
        messages: parts.toSummarize,
        turnPrefix: parts.turnPrefix,
        calls,
        focus: input.focus,
      },
      {
        counter,
        summaryModel: options.summaryModel,
        fallbackModel: options.fallbackModel,
        maxOutputTokens: resolved.summaryMaxTokens,
        inputBudget: Math.floor(room / Math.max(1, ratio)),
        timeoutMs: options.summaryTimeoutMs,
        renderMaxChars: 4_000,
        logger,
        signal: input.signal,
      },
    );
  };

  /**
   * The messages as they were said: the original this compactor kept, else (a message shortened before it
   * existed, e.g. before a restart) the one `options.originals` finds, else the message as memory holds it.
   */
  const originalsOf = async (
    messages: readonly Message[],
    kept: ReadonlyMap<string, Message>,
  ): Promise<Message[]> => {
    const missing = messages
      .filter((message) => !kept.has(message.id) && hasMark(message, "compressed"))
      .map((message) => message.id);
    let found: ReadonlyMap<string, Message> = new Map();
    if (missing.length > 0 && options.originals) {
      try {
        found = await options.originals(missing);
      } catch (error) {
        logger.warn(
          { messages: missing.length, error: describeError(error) },
          "could not look up the originals of shortened messages; journaling them shortened",
        );
      }
    }
    return messages.map((message) => kept.get(message.id) ?? found.get(message.id) ?? message);
  };

  const run = async (memory: WorkingMemory, input: CompactInput, startedAt: number, before: number) => {
    const ratio = ratioOf(memory);
    const rawThreshold = threshold.threshold / ratio;
    const limits = passLimits(resolved, rawThreshold);
    const active = memory.activeMessages();
    const calls = indexToolCalls(memory.messages);
    const context = { counter, calls, toolSummaries: resolved.toolSummaries };

    // Giant outputs are cut first (even recent ones), so the split sees their real cost.
    const giant = cutGiantOutputs(active, context, limits);
    const tokens = giant.messages.map((message) => counter.countMessage(message));
    const normalBudget = keepBudget(resolved, rawThreshold, input.reason === "overflow");
    const budget =
      input.reason === "command"
        ? commandKeepBudget(
            normalBudget,
            tokens.reduce((sum, count) => sum + count, 0),
          )
        : normalBudget;
    const split = splitForCompaction(giant.messages, tokens, budget);
    const old = compressOldMessages(
      giant.messages,
      (index) => isCompactedIndex(split, index),
      context,
      limits,
    );
    const compressed = old.messages;
    const passes: PassStats[] = [giant.stats, ...old.stats];
    const parts = splitParts(compressed, split);
    const leaving = [...parts.toSummarize, ...parts.turnPrefix];
    const leavingIds = new Set(leaving.map((message) => message.id));
    // Shortened versions of messages that stay in the prompt (all of them, when nothing leaves it).
    const replacementsFor = (staying: (message: Message) => boolean): Map<string, Message> => {
      const replacements = new Map<string, Message>();
      for (const [index, message] of compressed.entries()) {
        if (message !== active[index] && staying(message)) replacements.set(message.id, message);
      }
      return replacements;
    };

    const afterPasses = correctTokens(measure(memory, input, compressed), ratio);
    const passesSuffice = input.reason === "auto" && afterPasses <= threshold.threshold;
    let outcome: CompactionOutcome = "unchanged";
    let summary: SummaryOutcome | undefined;
    let dropped = 0;

    const { originals } = stateOf(memory);
    const remember = (replacements: ReadonlyMap<string, Message>): void => {
      for (const message of active) {
        if (replacements.has(message.id) && !originals.has(message.id)) originals.set(message.id, message);
      }
    };
    if (passesSuffice || leaving.length === 0) {
      const replacements = replacementsFor(() => true);
      if (replacements.size > 0) outcome = "compressed";
      commitCompaction(memory, { replacements, compacted: new Set(), retainCompacted: undefined });
      remember(replacements);
    } else {
      summary = await summarize(memory, parts, calls, input, ratio);
      const journaled = await originalsOf(
        active.filter((message) => leavingIds.has(message.id)),
        originals,
      );
      try {
        await options.journal?.({
          reason: input.reason,
          messages: journaled,
          summary: summary.text,
          createdAt: clock(),
        });
      } catch (error) {
        throw new InternalError(
          "compaction.journal_failed",
          `The compaction journal failed, so nothing was compacted: ${describeError(error)}`,
          { cause: error },
        );
      }
      const replacements = replacementsFor((message) => !leavingIds.has(message.id));
      dropped = commitCompaction(memory, {
        replacements,
        compacted: leavingIds,
        summary: {
          text: summary.text,
          updatedAt: clock(),
          compactions: (memory.summary?.compactions ?? 0) + 1,
        },
        retainCompacted: options.journal === undefined ? undefined : resolved.retainCompacted,
      });
      remember(replacements);
      for (const id of leavingIds) originals.delete(id);
      memory.setCounter(compactionCounters.count, memory.counter(compactionCounters.count) + 1);
      outcome = "summarized";
    }

    const countedAfter = measure(memory, input);
    stateOf(memory).counted = countedAfter;
    const after = correctTokens(countedAfter, ratio);
    // A strike is a summary that did not help: still over the threshold and no room made (a summary that made
    // room breaks the row). A check with nothing to summarize, or only cheap passes, costs no model call and
    // leaves the count as it was.
    const previousStrikes = memory.counter(compactionCounters.strikes);
    const strikes =
      input.reason === "command" || after <= threshold.threshold
        ? 0
        : outcome !== "summarized"
          ? previousStrikes
          : before - after >= roomMade
            ? 0
            : previousStrikes + 1;
    if (strikes >= resolved.maxStrikes && strikes > previousStrikes) {
      logger.warn(
        { strikes, tokens: after, threshold: threshold.threshold },
        "automatic compaction paused: repeated summaries left the prompt over the threshold; /compact resumes it",
      );
    }
    memory.setCounter(compactionCounters.strikes, strikes);
    const result: CompactionResult = {
      reason: input.reason,
      outcome,
      tokensBefore: before,
      tokensAfter: after,
      threshold: threshold.threshold,
      passes,
      summarizer: summary?.path ?? "none",
      llmCalls: summary?.llmCalls ?? 0,
      compactedMessages: outcome === "summarized" ? leaving.length : 0,
      turnPrefixMessages: outcome === "summarized" ? parts.turnPrefix.length : 0,
      droppedMessages: dropped,
      strikes,
      durationMs: clock() - startedAt,
      ...(options.notifyUser === true && outcome === "summarized"
        ? { notice: formatCompactionNotice(before, after) }
        : {}),
    };
    return result;
  };

  const compactor: Compactor = {
    beforeModelCall: (context) => compactionStep(context),
    threshold,
    meter,
    measure: (memory, input) => meter.measure(memory, input),
    state: (memory) => compactionStateOf(memory, resolved.maxStrikes),
    observe,
    check,
    async compact(memory, input) {
      const startedAt = clock();
      const before = correctTokens(measure(memory, input), ratioOf(memory));
      emit({
        type: "compaction-start",
        reason: input.reason,
        tokensBefore: before,
        threshold: threshold.threshold,
        at: startedAt,
      });
      try {
        const result = await run(memory, input, startedAt, before);
        const fields = { ...result, passes: undefined };
        if (result.outcome === "summarized") logger.info(fields, "context compacted");
        else logger.debug(fields, "context checked by the cheap passes");
        emit({ type: "compaction-end", ...result });
        return result;
      } catch (error) {
        emit({
          type: "compaction-end",
          reason: input.reason,
          outcome: "failed",
          tokensBefore: before,
          threshold: threshold.threshold,
          durationMs: clock() - startedAt,
          error: describeError(error),
        });
        throw error;
      }
    },
  };
  // Made after the compactor it calls; only ever called once both exist.
  const compactionStep = createCompactionStep(compactor, logger);
  return compactor;
}
