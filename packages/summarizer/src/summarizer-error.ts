import { AlmanacError, type AlmanacErrorOptions, type CodesOf, defineErrorCodes } from "@almanac/core";

/** Every code the summarizer package throws. */
export const summarizerErrorCodes = defineErrorCodes({
  /** A person kept editing the daily log while the job tried to commit (retryable). */
  "summarizer.conflict": { category: "internal" },
  /** The job was stopped because the queue shut down; it stays journaled. */
  "summarizer.stopped": { category: "internal" },
  /** A job's saved checkpoint is not in the expected shape (the job is parked, not guessed at). */
  "summarizer.checkpoint_invalid": { category: "internal" },
  /** A summarizer option is out of range (names the option). */
  "summarizer.config_invalid": { category: "internal" },
  /** The window minus the output cap leaves no room for messages after the instructions and tools. */
  "summarizer.window_too_small": { category: "internal" },
  /** A summarizer step would not fit the window even lightened; handled like an overflow (the part is split). */
  "summarizer.step_too_long": { category: "internal" },
  /** A job was cut short by a restart; it runs again. */
  "summarizer.interrupted": { category: "internal" },
  "summarizer.journal_damaged": { category: "internal" },
  "summarizer.invalid_job": { category: "user", status: 400 },
  "summarizer.job_not_found": { category: "user", status: 404 },
  "summarizer.job_not_parked": { category: "user", status: 409 },
  /** The summarizer agent's edit of a daily log did not match the file (told to it as a tool error). */
  "memory.edit_mismatch": { category: "user" },
  "memory.rewrite_refused": { category: "user" },
  "config.invalid": { category: "user" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof summarizerErrorCodes> {}
}

/** Codes of {@link SummarizerError}. */
export type SummarizerErrorCode = Extract<
  keyof typeof summarizerErrorCodes,
  | "summarizer.conflict"
  | "summarizer.stopped"
  | "summarizer.checkpoint_invalid"
  | "summarizer.config_invalid"
  | "summarizer.window_too_small"
  | "summarizer.step_too_long"
>;

/** Options of a {@link SummarizerError}. */
export interface SummarizerErrorOptions extends AlmanacErrorOptions {
  /** True when running the job again later may succeed. Default false. */
  readonly isRetryable?: boolean;
}

/** A failure of the summarizer itself (not of the model, whose errors pass through unchanged). */
export class SummarizerError extends AlmanacError {
  readonly isRetryable: boolean;

  constructor(code: SummarizerErrorCode, message: string, options: SummarizerErrorOptions = {}) {
    super("internal", code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.isRetryable = options.isRetryable ?? false;
  }
}
