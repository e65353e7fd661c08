import { UserError } from "@almanac/core";

/**
 * Returns `value` (or `fallback` when it is undefined) after checking it is a whole number of at least 1.
 * Throws `UserError` (`config.invalid`) naming the option, e.g. `createAgent: maxIterations`.
 */
export function positiveInteger(value: number | undefined, fallback: number, option: string): number {
  const chosen = value ?? fallback;
  if (!Number.isSafeInteger(chosen) || chosen < 1) {
    throw new UserError(
      "config.invalid",
      `${option} must be a whole number of at least 1 (got ${String(value)}).`,
    );
  }
  return chosen;
}
