import { UserError } from "@almanac/core";

/** One row of the threshold table: windows up to `upToWindow` tokens compact at `share` of the usable window. */
export interface ThresholdTier {
  /** Largest context window (tokens) this tier applies to; omit on the last tier (no upper bound). */
  readonly upToWindow?: number;
  /** Share of the usable window (window − output reserve) at which compaction starts, in (0, 1]. */
  readonly share: number;
}

/** How the compaction threshold is derived from a model's window; every field has a documented default. */
export interface ThresholdOptions {
  /** The tier table, smallest window first. Default {@link defaultThresholdTiers}. */
  readonly tiers?: readonly ThresholdTier[];
  /** A fixed share that replaces the tier table for this model. */
  readonly share?: number;
  /** Absolute ceiling in tokens, so 1M-token models still compact. Default {@link defaultThresholdCeiling}. */
  readonly ceiling?: number;
}

/**
 * Default tiers: small windows keep more headroom, because one tool output or a miscount is a larger
 * share of them; large windows can run fuller. See docs/compaction.md for the reasoning.
 */
export const defaultThresholdTiers: readonly ThresholdTier[] = Object.freeze([
  { upToWindow: 16_384, share: 0.6 },
  { upToWindow: 65_536, share: 0.7 },
  { upToWindow: 262_144, share: 0.75 },
  { share: 0.8 },
]);

/** Default absolute ceiling: beyond ~200K tokens every request is slow and costly, and recall suffers. */
export const defaultThresholdCeiling = 200_000;

/** The numbers the compactor works with for one model. */
export interface ResolvedThreshold {
  readonly contextWindow: number;
  /** Tokens kept free for the model's answer. */
  readonly outputReserve: number;
  /** `contextWindow − outputReserve`. */
  readonly usableWindow: number;
  /** The share applied (from the tier table or the fixed share). */
  readonly share: number;
  /** Compaction starts when the (corrected) prompt is above this many tokens. */
  readonly threshold: number;
  /** True when the ceiling, not the share, decided the threshold. */
  readonly capped: boolean;
}

function invalid(option: string, requirement: string, value: unknown): never {
  throw new UserError(
    "compaction.config_invalid",
    `createCompactor: ${option} must be ${requirement} (got ${String(value)}).`,
  );
}

function checkShare(value: number, option: string): number {
  if (!Number.isFinite(value) || value <= 0 || value > 1) invalid(option, "a number in (0, 1]", value);
  return value;
}

function tierShare(contextWindow: number, tiers: readonly ThresholdTier[]): number {
  for (const [index, tier] of tiers.entries()) {
    checkShare(tier.share, `thresholds.tiers[${index}].share`);
    if (tier.upToWindow === undefined || contextWindow <= tier.upToWindow) return tier.share;
  }
  // A table whose last row has a bound: windows above it use that last row's share.
  const last = tiers.at(-1);
  if (last === undefined) return invalid("thresholds.tiers", "a non-empty list", "[]");
  return last.share;
}

/**
 * Computes the compaction threshold: `min(share × (window − outputReserve), ceiling)`, where the share comes
 * from the tier the window falls in. Throws `UserError` (`compaction.config_invalid`) naming a bad option.
 */
export function resolveThreshold(
  contextWindow: number,
  outputReserve: number,
  options: ThresholdOptions = {},
): ResolvedThreshold {
  if (!Number.isSafeInteger(contextWindow) || contextWindow < 1) {
    invalid("contextWindow", "a whole number of tokens of at least 1", contextWindow);
  }
  if (!Number.isSafeInteger(outputReserve) || outputReserve < 0 || outputReserve >= contextWindow) {
    invalid("maxOutputTokens", `a whole number from 0 to ${contextWindow - 1}`, outputReserve);
  }
  const ceiling = options.ceiling ?? defaultThresholdCeiling;
  if (!Number.isSafeInteger(ceiling) || ceiling < 1) {
    invalid("thresholds.ceiling", "a whole number of tokens of at least 1", ceiling);
  }
  const share =
    options.share === undefined
      ? tierShare(contextWindow, options.tiers ?? defaultThresholdTiers)
      : checkShare(options.share, "thresholds.share");
  const usableWindow = contextWindow - outputReserve;
  const byShare = Math.floor(usableWindow * share);
  return {
    contextWindow,
    outputReserve,
    usableWindow,
    share,
    threshold: Math.min(byShare, ceiling),
    capped: ceiling < byShare,
  };
}

/**
 * The share of the threshold the fixed part of a prompt (system prompt, memory excerpt, tool specs) may take.
 * After a compaction the prompt is the fixed part, the summary (up to 15 % of the threshold) and the kept tail
 * (25 %, up to 50 %): with a fixed part any larger, compacting cannot bring a tool-heavy turn back under the
 * threshold, and on small windows the first requests would not fit at all.
 */
export const fixedPromptShare = 0.5;

/** Tokens the fixed part of a prompt may take under `threshold`: see {@link fixedPromptShare}. */
export function fixedPromptBudget(threshold: ResolvedThreshold): number {
  return Math.floor(threshold.threshold * fixedPromptShare);
}
