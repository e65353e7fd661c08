import { isAlmanacError } from "@almanac/core";

/** The code `@almanac/llm` gives a prompt the provider refused as longer than the context window. */
export const contextLengthErrorCode = "llm.context_length";

/**
 * True for a provider's "context too long" refusal. Matched by error code, so this package needs no
 * runtime dependency on `@almanac/llm` (whose `ModelError` with kind `context_length` has this code).
 */
export function isContextLengthError(error: unknown): boolean {
  return isAlmanacError(error) && error.code === contextLengthErrorCode;
}

/** What an emergency compaction reports back: whether it made the prompt smaller. */
export interface EmergencyCompaction {
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

/** Emergency compactions one run may take; each must shrink the prompt, so this only bounds a pathological run. */
const MAX_RECOVERIES = 16;

/**
 * Runs `run`; each time it fails because the prompt was too long for the window, runs `compactNow` (an
 * emergency compaction, e.g. `compactor.compact(memory, {..., reason: "overflow"})`) and runs `run` again,
 * for as many steps of a turn as overflow, as long as every compaction made the prompt smaller. Any other
 * error, an overflow that a compaction could not shrink, or a failing `compactNow` propagates.
 *
 * For the agent: wrap `agent.run({memory})` without `input` (the user message is already in memory), so the
 * retry continues the same turn instead of adding the message twice.
 */
export async function runWithOverflowRecovery<T>(
  run: () => Promise<T>,
  compactNow: () => Promise<EmergencyCompaction>,
): Promise<T> {
  for (let recoveries = 0; ; recoveries += 1) {
    try {
      return await run();
    } catch (error) {
      if (!isContextLengthError(error) || recoveries >= MAX_RECOVERIES) throw error;
      const compaction = await compactNow();
      if (compaction.tokensAfter >= compaction.tokensBefore) throw error;
    }
  }
}
