import type { BeforeModelCall, WorkingMemory } from "@almanac/agent";
import { describeError, type Message, type ToolSpec, type Usage } from "@almanac/core";
import { type CompactionReason, commitCompaction } from "./commit-compaction.js";
import {
  type CompactionEvent,
  type CompactionOutcome,
  type CompactionResult,
  formatCompactionNotice,
} from "./compaction-events.js";
import { createCompactionStep } from "./compaction-hook.js";
import { planCompaction, replacementsOf } from "./compaction-plan.js";
import {
  type CompactorOptions,
  defaultMaxStrikes,
  type ResolvedCompactorOptions,
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
import type { SummaryOutcome } from "./summarize.js";
import { summarizeAndJournal } from "./summarize-and-journal.js";
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
  return new ContextCompactor(options);
}

/**
 * The {@link Compactor} {@link createCompactor} makes. Named apart from the interface so the interface stays
 * the public type: fakes and callers depend on the shape, not on this class's private state.
 */
class ContextCompactor implements Compactor {
  readonly threshold: ResolvedThreshold;
  readonly meter: ContextMeter;
  readonly beforeModelCall: BeforeModelCall;
  readonly #options: CompactorOptions;
  readonly #resolved: ResolvedCompactorOptions;
  /** Most prompt tokens a request may carry (see {@link ContextCheck.limit}). */
  readonly #promptLimit: number;
  /**
   * A summarizing compaction that shrank the prompt by this much made room, over the threshold or not: the
   * turn can go on, so it is no strike. Strikes stop repeated summaries that do not help.
   */
  readonly #roomMade: number;
  /** Keyed by the memory, which lives as long as the loaded session (and so does this compactor). */
  readonly #states = new WeakMap<WorkingMemory, MemoryState>();

  constructor(options: CompactorOptions) {
    this.#options = options;
    this.#resolved = resolveCompactorOptions(options);
    this.threshold = this.#resolved.threshold;
    this.meter = createContextMeter(options.tokenCounter);
    this.#promptLimit = Math.floor(this.threshold.usableWindow * 0.95);
    this.#roomMade = Math.max(1, Math.floor(this.threshold.threshold * 0.1));
    // Last: the step calls back into this compactor.
    this.beforeModelCall = createCompactionStep(this, this.#resolved.logger);
  }

  measure(memory: WorkingMemory, input: PromptInput): PromptMeasure {
    return this.meter.measure(memory, input);
  }

  state(memory: WorkingMemory): CompactionState {
    return compactionStateOf(memory, this.#resolved.maxStrikes);
  }

  observe(memory: WorkingMemory, usage: Usage | undefined): void {
    const state = this.#stateOf(memory);
    if (usage === undefined || usage === state.usage) return;
    state.usage = usage;
    const previous = memory.counters[compactionCounters.tokenRatio];
    const learnt = updateTokenRatio(previous, usage, state.counted, this.#resolved.ratioBounds);
    if (learnt !== previous && state.counted !== undefined)
      memory.setCounter(compactionCounters.tokenRatio, learnt);
  }

  check(memory: WorkingMemory, input: CheckInput): ContextCheck {
    const state = this.#stateOf(memory);
    this.observe(memory, input.lastUsage);
    const ratio = ratioOf(memory);
    const countedTokens = this.#count(memory, input);
    state.counted = countedTokens;
    const promptTokens = correctTokens(countedTokens, ratio);
    const threshold = this.threshold.threshold;
    const due = promptTokens > threshold;
    let strikes = memory.counter(compactionCounters.strikes);
    if (!due && strikes > 0) {
      memory.setCounter(compactionCounters.strikes, 0);
      strikes = 0;
    }
    return {
      countedTokens,
      ratio,
      promptTokens,
      threshold,
      due,
      limit: this.#promptLimit,
      overLimit: promptTokens > this.#promptLimit,
      strikes,
      suspended: due && strikes >= this.#resolved.maxStrikes,
    };
  }

  async compact(memory: WorkingMemory, input: CompactInput): Promise<CompactionResult> {
    const { clock, logger } = this.#resolved;
    const startedAt = clock();
    const before = correctTokens(this.#count(memory, input), ratioOf(memory));
    this.#emit({
      type: "compaction-start",
      reason: input.reason,
      tokensBefore: before,
      threshold: this.threshold.threshold,
      at: startedAt,
    });
    try {
      const result = await this.#run(memory, input, startedAt, before);
      const fields = { ...result, passes: undefined };
      if (result.outcome === "summarized") logger.info(fields, "context compacted");
      else logger.debug(fields, "context checked by the cheap passes");
      this.#emit({ type: "compaction-end", ...result });
      return result;
    } catch (error) {
      this.#emit({
        type: "compaction-end",
        reason: input.reason,
        outcome: "failed",
        tokensBefore: before,
        threshold: this.threshold.threshold,
        durationMs: clock() - startedAt,
        error: describeError(error),
      });
      throw error;
    }
  }

  /** Plans, commits (cheap passes only, or a journaled summary), then counts the strikes. */
  async #run(
    memory: WorkingMemory,
    input: CompactInput,
    startedAt: number,
    before: number,
  ): Promise<CompactionResult> {
    const { clock, maxStrikes, logger } = this.#resolved;
    const threshold = this.threshold.threshold;
    const ratio = ratioOf(memory);
    const plan = planCompaction(memory, {
      resolved: this.#resolved,
      counter: this.#options.tokenCounter,
      ratio,
      reason: input.reason,
    });
    const afterPasses = correctTokens(this.#count(memory, input, plan.compressed), ratio);
    const passesSuffice = input.reason === "auto" && afterPasses <= threshold;
    let outcome: CompactionOutcome = "unchanged";
    let summary: SummaryOutcome | undefined;
    let dropped = 0;

    const { originals } = this.#stateOf(memory);
    const remember = (replacements: ReadonlyMap<string, Message>): void => {
      for (const message of plan.active) {
        if (replacements.has(message.id) && !originals.has(message.id)) originals.set(message.id, message);
      }
    };
    if (passesSuffice || plan.leaving.length === 0) {
      const replacements = replacementsOf(plan, () => true);
      if (replacements.size > 0) outcome = "compressed";
      commitCompaction(memory, { replacements, compacted: new Set(), retainCompacted: undefined });
      remember(replacements);
    } else {
      summary = await summarizeAndJournal(memory, plan, {
        options: this.#options,
        resolved: this.#resolved,
        ratio,
        reason: input.reason,
        focus: input.focus,
        signal: input.signal,
        originals,
      });
      const replacements = replacementsOf(plan, (message) => !plan.leavingIds.has(message.id));
      dropped = commitCompaction(memory, {
        replacements,
        compacted: plan.leavingIds,
        summary: {
          text: summary.text,
          updatedAt: clock(),
          compactions: (memory.summary?.compactions ?? 0) + 1,
        },
        retainCompacted: this.#options.journal === undefined ? undefined : this.#resolved.retainCompacted,
      });
      remember(replacements);
      for (const id of plan.leavingIds) originals.delete(id);
      memory.setCounter(compactionCounters.count, memory.counter(compactionCounters.count) + 1);
      outcome = "summarized";
    }

    const countedAfter = this.#count(memory, input);
    this.#stateOf(memory).counted = countedAfter;
    const after = correctTokens(countedAfter, ratio);
    // A strike is a summary that did not help: still over the threshold and no room made (a summary that made
    // room breaks the row). A check with nothing to summarize, or only cheap passes, costs no model call and
    // leaves the count as it was.
    const previousStrikes = memory.counter(compactionCounters.strikes);
    const strikes =
      input.reason === "command" || after <= threshold
        ? 0
        : outcome !== "summarized"
          ? previousStrikes
          : before - after >= this.#roomMade
            ? 0
            : previousStrikes + 1;
    if (strikes >= maxStrikes && strikes > previousStrikes) {
      logger.warn(
        { strikes, tokens: after, threshold },
        "automatic compaction paused: repeated summaries left the prompt over the threshold; /compact resumes it",
      );
    }
    memory.setCounter(compactionCounters.strikes, strikes);
    return {
      reason: input.reason,
      outcome,
      tokensBefore: before,
      tokensAfter: after,
      threshold,
      passes: plan.passes,
      summarizer: summary?.path ?? "none",
      llmCalls: summary?.llmCalls ?? 0,
      compactedMessages: outcome === "summarized" ? plan.leaving.length : 0,
      turnPrefixMessages: outcome === "summarized" ? plan.parts.turnPrefix.length : 0,
      droppedMessages: dropped,
      strikes,
      durationMs: clock() - startedAt,
      ...(this.#options.notifyUser === true && outcome === "summarized"
        ? { notice: formatCompactionNotice(before, after) }
        : {}),
    };
  }

  #stateOf(memory: WorkingMemory): MemoryState {
    let state = this.#states.get(memory);
    if (state === undefined) {
      state = { counted: undefined, usage: undefined, originals: new Map() };
      this.#states.set(memory, state);
    }
    return state;
  }

  /** Our tokenizer's count of the request built from `input` and `messages`. */
  #count(memory: WorkingMemory, input: PromptInput, messages = memory.activeMessages()): number {
    return this.meter.measure(memory, input, messages).countedTokens;
  }

  /** Listeners are the caller's code: one that throws is logged, never allowed to fail a compaction. */
  #emit(event: CompactionEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch (error) {
      this.#resolved.logger.error(
        { event: event.type, error: describeError(error) },
        "compaction event listener threw",
      );
    }
  }
}

/** The provider/our-count ratio learnt for this memory; 1 until a usage has been observed. */
function ratioOf(memory: WorkingMemory): number {
  return memory.counters[compactionCounters.tokenRatio] ?? 1;
}
