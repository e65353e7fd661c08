import { AlmanacError, type AlmanacErrorOptions, type CodesOf, defineErrorCodes } from "@almanac/core";

/** Every code the consolidation package throws. */
export const consolidationErrorCodes = defineErrorCodes({
  /** A person kept editing MEMORY.md (or a topic file) while a run tried to commit (retryable). */
  "consolidation.conflict": { category: "internal" },
  /** A run was cut short by a stop or a crash; it runs again. */
  "consolidation.interrupted": { category: "internal" },
  /** The window minus the output cap leaves no room for log text after the instructions, tools and MEMORY.md. */
  "consolidation.window_too_small": { category: "internal" },
  /** A consolidation option is out of range (names the option). */
  "consolidation.config_invalid": { category: "internal" },
  /** No model is configured, so there is nothing to consolidate with. */
  "consolidation.no_model": { category: "user", status: 503 },
  /** The agent's edit did not match MEMORY.md, named a missing heading, or an unusable topic (told to it). */
  "memory.edit_mismatch": { category: "user" },
  "memory.shrink_refused": { category: "user", status: 409 },
  "config.invalid": { category: "user" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof consolidationErrorCodes> {}
}

/** Codes of {@link ConsolidationError}. */
export type ConsolidationErrorCode = Extract<
  keyof typeof consolidationErrorCodes,
  | "consolidation.conflict"
  | "consolidation.interrupted"
  | "consolidation.window_too_small"
  | "consolidation.config_invalid"
>;

/** Options of a {@link ConsolidationError}. */
export interface ConsolidationErrorOptions extends AlmanacErrorOptions {
  /** True when running again later may succeed. Default false. */
  readonly isRetryable?: boolean;
}

/** A failure of consolidation itself (the model's errors pass through unchanged). */
export class ConsolidationError extends AlmanacError {
  readonly isRetryable: boolean;

  constructor(code: ConsolidationErrorCode, message: string, options: ConsolidationErrorOptions = {}) {
    super("internal", code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.isRetryable = options.isRetryable ?? false;
  }
}
