/** Which side a failure belongs to: the user's input or config, a provider we call, or our own code. */
export type ErrorCategory = "user" | "provider" | "internal";

/** Options shared by every Almanac error. */
export interface AlmanacErrorOptions {
  readonly cause?: unknown;
}

/**
 * Base of every error Almanac throws on purpose. `code` is a stable string
 * (e.g. `config.invalid`, `llm.rate_limit`) that callers, logs and HTTP mapping rely on.
 */
export class AlmanacError extends Error {
  readonly code: string;
  readonly category: ErrorCategory;

  constructor(category: ErrorCategory, code: string, message: string, options: AlmanacErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.category = category;
  }
}

/** Bad input or configuration: the message tells the user what to change. */
export class UserError extends AlmanacError {
  constructor(code: string, message: string, options: AlmanacErrorOptions = {}) {
    super("user", code, message, options);
  }
}

/** Options of a provider error. */
export interface ProviderErrorOptions extends AlmanacErrorOptions {
  readonly isRetryable: boolean;
  /** Delay the provider asked for (Retry-After), in milliseconds. */
  readonly retryAfterMs?: number;
  /** HTTP status, when the failure came as an HTTP response. */
  readonly status?: number;
}

/** A failure of something we call (model endpoint, embedding endpoint, vector store, platform API). */
export class ProviderError extends AlmanacError {
  readonly isRetryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;

  constructor(code: string, message: string, options: ProviderErrorOptions) {
    super("provider", code, message, options);
    this.isRetryable = options.isRetryable;
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
  }
}

/** A bug or broken invariant in Almanac itself. */
export class InternalError extends AlmanacError {
  constructor(code: string, message: string, options: AlmanacErrorOptions = {}) {
    super("internal", code, message, options);
  }
}

/** Type guard for any Almanac error. */
export function isAlmanacError(error: unknown): error is AlmanacError {
  return error instanceof AlmanacError;
}

/** A short, safe description of any thrown value (for logs and tool results). */
export function describeError(error: unknown): string {
  if (error instanceof AlmanacError) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
