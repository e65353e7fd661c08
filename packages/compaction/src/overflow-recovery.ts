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

/**
 * Runs `run`; if it fails because the prompt was too long for the window, runs `compactNow` (an emergency
 * compaction, e.g. `compactor.compact(memory, {..., reason: "overflow"})`) and runs `run` once more.
 * Any other error, a second overflow, or a failing `compactNow` propagates.
 *
 * For the agent: wrap `agent.run({memory})` without `input` (the user message is already in memory), so the
 * retry continues the same turn instead of adding the message twice.
 */
export async function runWithOverflowRecovery<T>(
  run: () => Promise<T>,
  compactNow: () => Promise<unknown>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!isContextLengthError(error)) throw error;
    await compactNow();
    return run();
  }
}
