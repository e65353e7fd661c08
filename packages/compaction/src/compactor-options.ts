import { type ChatModel, type Logger, silentLogger, type TokenCounter, UserError } from "@almanac/core";
import type { CheapPassLimits } from "./cheap-passes.js";
import type { CompactionJournal, OriginalsLookup } from "./commit-compaction.js";
import type { CompactionEvent } from "./compaction-events.js";
import { defaultRatioBounds, type RatioBounds } from "./context-check.js";
import type { KeepRecentBudget } from "./split-turns.js";
import { type ResolvedThreshold, resolveThreshold, type ThresholdOptions } from "./thresholds.js";
import { defaultToolSummaries, type ToolSummaryRegistry } from "./tool-summaries.js";

/** Compactions in a row that fail to help before automatic compaction pauses, unless configured otherwise. */
export const defaultMaxStrikes = 3;

/** How much recent conversation stays verbatim, as shares of the threshold. */
export interface KeepRecentOptions {
  /** Token budget of the kept tail, as a share of the threshold. Default 0.25. */
  readonly share?: number;
  /** The tail grows past its budget until it has this many messages. Default 4. */
  readonly minMessages?: number;
  /** ...but never past this share of the threshold. Default 0.5. */
  readonly maxShare?: number;
  /** Tail budget of an emergency (overflow) compaction, as a share of the threshold. Default 0.1. */
  readonly overflowShare?: number;
}

/** Limits of the cheap passes; sizes relative to the threshold scale with the model. */
export interface CheapPassOptions {
  /** Tool outputs shorter than this are never deduplicated. Default 200 characters. */
  readonly dedupeMinChars?: number;
  /** Old tool outputs above this many tokens become one-line summaries. Default 150. */
  readonly toolOutputMaxTokens?: number;
  /** Old tool-call argument strings longer than this are shortened. Default 300 characters. */
  readonly argumentMaxChars?: number;
  /** Characters kept of a shortened argument string. Default 120. */
  readonly argumentKeepChars?: number;
  /** A tool output above this share of the threshold is giant and cut, even a recent one. Default 0.2. */
  readonly giantShare?: number;
  /** What a giant output is cut to, as a share of the threshold. Default 0.08. */
  readonly giantKeepShare?: number;
}

/** Configuration of `createCompactor`; one compactor per chat model (every knob is per model). */
export interface CompactorOptions {
  /** The cached counter (`createTokenCounter()` of `@almanac/tokenizer`), shared with the rest of the server. */
  readonly tokenCounter: TokenCounter;
  /** The main model's context window, in tokens. */
  readonly contextWindow: number;
  /** Output reserve: tokens kept free for the main model's answer. */
  readonly maxOutputTokens: number;
  readonly thresholds?: ThresholdOptions;
  readonly keepRecent?: KeepRecentOptions;
  readonly passes?: CheapPassOptions;
  /** The model that writes summaries (may be cheaper than the main model). */
  readonly summaryModel: ChatModel;
  /** Tried once when the summary model fails, usually the main model. Without it, failure goes straight to the static summary. */
  readonly fallbackModel?: ChatModel;
  /** Output tokens of a summary. Default 15% of the threshold, between 512 and 4,096. */
  readonly summaryMaxTokens?: number;
  /** Timeout of one summary request in milliseconds. Default: the model's own. */
  readonly summaryTimeoutMs?: number;
  /** Awaited before every commit; see {@link CompactionJournal}. */
  readonly journal?: CompactionJournal;
  /** Originals of messages shortened before this compactor existed (e.g. from the session transcript). */
  readonly originals?: OriginalsLookup;
  readonly onEvent?: (event: CompactionEvent) => void;
  /** Put a one-line notice for the user on `compaction-end` events of compactions that summarized. Default false. */
  readonly notifyUser?: boolean;
  /** One-liners by tool name, merged over the defaults for Almanac's own tools. */
  readonly toolSummaries?: ToolSummaryRegistry;
  /** Compacted messages kept in memory (the rest are dropped once journaled). Default 200. Needs `journal`. */
  readonly retainCompacted?: number;
  /** Compactions in a row that fail to get under the threshold before automatic compaction pauses. Default 3. */
  readonly maxStrikes?: number;
  /** Bounds of the provider/our-count correction. Default 0.5–2. */
  readonly ratioBounds?: RatioBounds;
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly clock?: () => number;
  readonly logger?: Logger;
}

/** Options with defaults applied and checked. */
export interface ResolvedCompactorOptions {
  readonly threshold: ResolvedThreshold;
  readonly keepShare: number;
  readonly keepMaxShare: number;
  readonly overflowShare: number;
  readonly minMessages: number;
  readonly passes: Required<CheapPassOptions>;
  readonly summaryMaxTokens: number;
  readonly toolSummaries: ToolSummaryRegistry;
  readonly retainCompacted: number;
  readonly maxStrikes: number;
  readonly ratioBounds: RatioBounds;
  readonly clock: () => number;
  readonly logger: Logger;
}

function invalid(option: string, requirement: string, value: unknown): never {
  throw new UserError(
    "compaction.config_invalid",
    `createCompactor: ${option} must be ${requirement} (got ${String(value)}).`,
  );
}

function share(value: number | undefined, fallback: number, option: string): number {
  const chosen = value ?? fallback;
  if (!Number.isFinite(chosen) || chosen <= 0 || chosen > 1) invalid(option, "a number in (0, 1]", value);
  return chosen;
}

function whole(value: number | undefined, fallback: number, minimum: number, option: string): number {
  const chosen = value ?? fallback;
  if (!Number.isSafeInteger(chosen) || chosen < minimum) {
    invalid(option, `a whole number of at least ${minimum}`, value);
  }
  return chosen;
}

/** Applies defaults and checks every knob; throws `UserError` (`compaction.config_invalid`) naming the key. */
export function resolveCompactorOptions(options: CompactorOptions): ResolvedCompactorOptions {
  const threshold = resolveThreshold(options.contextWindow, options.maxOutputTokens, options.thresholds);
  const keep = options.keepRecent ?? {};
  const passes = options.passes ?? {};
  const bounds = options.ratioBounds ?? defaultRatioBounds;
  if (!(bounds.min > 0 && bounds.min <= 1 && bounds.max >= 1 && Number.isFinite(bounds.max))) {
    invalid("ratioBounds", "{min in (0, 1], max ≥ 1}", JSON.stringify(bounds));
  }
  const defaultSummaryTokens = Math.min(4_096, Math.max(512, Math.round(threshold.threshold * 0.15)));
  const resolved: ResolvedCompactorOptions = {
    threshold,
    keepShare: share(keep.share, 0.25, "keepRecent.share"),
    keepMaxShare: share(keep.maxShare, 0.5, "keepRecent.maxShare"),
    overflowShare: share(keep.overflowShare, 0.1, "keepRecent.overflowShare"),
    minMessages: whole(keep.minMessages, 4, 1, "keepRecent.minMessages"),
    passes: {
      dedupeMinChars: whole(passes.dedupeMinChars, 200, 1, "passes.dedupeMinChars"),
      toolOutputMaxTokens: whole(passes.toolOutputMaxTokens, 150, 1, "passes.toolOutputMaxTokens"),
      argumentMaxChars: whole(passes.argumentMaxChars, 300, 1, "passes.argumentMaxChars"),
      argumentKeepChars: whole(passes.argumentKeepChars, 120, 0, "passes.argumentKeepChars"),
      giantShare: share(passes.giantShare, 0.2, "passes.giantShare"),
      giantKeepShare: share(passes.giantKeepShare, 0.08, "passes.giantKeepShare"),
    },
    summaryMaxTokens: whole(options.summaryMaxTokens, defaultSummaryTokens, 64, "summaryMaxTokens"),
    toolSummaries: { ...defaultToolSummaries, ...options.toolSummaries },
    retainCompacted: whole(options.retainCompacted, 200, 0, "retainCompacted"),
    maxStrikes: whole(options.maxStrikes, defaultMaxStrikes, 1, "maxStrikes"),
    ratioBounds: bounds,
    clock: options.clock ?? Date.now,
    logger: (options.logger ?? silentLogger).child({ component: "compaction" }),
  };
  if (resolved.passes.argumentKeepChars >= resolved.passes.argumentMaxChars) {
    invalid("passes.argumentKeepChars", "smaller than passes.argumentMaxChars", passes.argumentKeepChars);
  }
  if (resolved.passes.giantKeepShare >= resolved.passes.giantShare) {
    invalid("passes.giantKeepShare", "smaller than passes.giantShare", passes.giantKeepShare);
  }
  if (options.summaryTimeoutMs !== undefined) whole(options.summaryTimeoutMs, 1, 1, "summaryTimeoutMs");
  return resolved;
}

/** The pass limits in our-tokenizer tokens, for a threshold already divided by the provider ratio. */
export function passLimits(resolved: ResolvedCompactorOptions, rawThreshold: number): CheapPassLimits {
  const { passes } = resolved;
  return {
    dedupeMinChars: passes.dedupeMinChars,
    toolOutputMaxTokens: passes.toolOutputMaxTokens,
    argumentMaxChars: passes.argumentMaxChars,
    argumentKeepChars: passes.argumentKeepChars,
    giantMinTokens: Math.max(1, Math.floor(rawThreshold * passes.giantShare)),
    giantKeepTokens: Math.max(1, Math.floor(rawThreshold * passes.giantKeepShare)),
  };
}

/** The kept-tail budget in our-tokenizer tokens; an overflow compaction keeps much less. */
export function keepBudget(
  resolved: ResolvedCompactorOptions,
  rawThreshold: number,
  emergency: boolean,
): KeepRecentBudget {
  if (emergency) {
    const budget = Math.floor(rawThreshold * resolved.overflowShare);
    return { budget, minMessages: 1, maxTokens: budget };
  }
  return {
    budget: Math.floor(rawThreshold * resolved.keepShare),
    minMessages: resolved.minMessages,
    maxTokens: Math.floor(rawThreshold * Math.max(resolved.keepShare, resolved.keepMaxShare)),
  };
}

/**
 * `/compact` is an explicit request: keep at most half of what is in the prompt, so older turns are
 * summarized even when the prompt is far below the threshold (the normal tail would keep everything).
 */
export function commandKeepBudget(normal: KeepRecentBudget, promptTokens: number): KeepRecentBudget {
  const half = Math.floor(promptTokens / 2);
  return {
    budget: Math.min(normal.budget, half),
    minMessages: normal.minMessages,
    maxTokens: Math.min(normal.maxTokens, half),
  };
}

/**
 * The most tokens a fresh tool output should take: three quarters of the size at which the giant-output pass
 * (the one pass allowed to touch the recent tail) would cut it before the model read it. Tools that can size
 * their answer (the memory tools) are given this, so what they return reaches the model whole.
 */
export function toolOutputTokenBudget(
  options: Pick<CompactorOptions, "contextWindow" | "maxOutputTokens" | "thresholds" | "passes">,
): number {
  const { threshold } = resolveThreshold(options.contextWindow, options.maxOutputTokens, options.thresholds);
  const giantShare = options.passes?.giantShare ?? 0.2;
  return Math.max(64, Math.floor(threshold * giantShare * 0.75));
}
