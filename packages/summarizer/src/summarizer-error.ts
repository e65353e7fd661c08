import { AlmanacError, type AlmanacErrorOptions } from "@almanac/core";

/** Codes of {@link SummarizerError}. */
export type SummarizerErrorCode =
  /** A person kept editing the daily log while the job tried to commit (retryable). */
  | "summarizer.conflict"
  /** The job was stopped because the queue shut down; it stays journaled. */
  | "summarizer.stopped"
  /** A job's saved checkpoint is not in the expected shape (the job is parked, not guessed at). */
  | "summarizer.checkpoint_invalid"
  /** A summarizer option is out of range (names the option). */
  | "summarizer.config_invalid"
  /** The window minus the output cap leaves no room for messages after the instructions and tools. */
  | "summarizer.window_too_small"
  /** A summarizer step would not fit the window even lightened; handled like an overflow (the part is split). */
  | "summarizer.step_too_long";

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
