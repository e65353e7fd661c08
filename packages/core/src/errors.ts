/** Which side a failure belongs to: the user's input or config, a provider we call, or our own code. */
export type ErrorCategory = "user" | "provider" | "internal";

/** What a stable error code means: whose failure it is, the HTTP status it answers with, and what a person reads. */
export interface ErrorCodeInfo {
  readonly category: ErrorCategory;
  /** HTTP status when the code reaches the API (default by category: user 400, provider 502, internal 500). */
  readonly status?: number;
  /**
   * What a person in a chat reads when a turn fails with this code (default by category). Plain words, no
   * internals: details go to the log.
   */
  readonly forPeople?: string;
}

/**
 * The codes of every package, as one interface that each package's registry adds to (see
 * {@link defineErrorCodes}): an error constructed with a code no registry declares does not compile.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by each package's registry through declaration merging
export interface AlmanacErrorCodes {}

/** Every stable error code some package declares. */
export type ErrorCode = keyof AlmanacErrorCodes & string;

/**
 * A package's registry of its error codes (category, HTTP status, text for people). The package then adds its
 * codes to {@link AlmanacErrorCodes}:
 * `declare module "@almanac/core" { interface AlmanacErrorCodes extends CodesOf<typeof fooErrorCodes> {} }`.
 */
export function defineErrorCodes<const Codes extends Readonly<Record<string, ErrorCodeInfo>>>(
  codes: Codes,
): Codes {
  return Object.freeze(codes);
}

/** The keys of a registry as the shape {@link AlmanacErrorCodes} merges. */
export type CodesOf<Registry> = { readonly [Code in keyof Registry]: true };

/** Options shared by every Almanac error. */
export interface AlmanacErrorOptions {
  readonly cause?: unknown;
}

/**
 * Base of every error Almanac throws on purpose. `code` is a stable string
 * (e.g. `config.invalid`, `llm.rate_limit`) that callers, logs and HTTP mapping rely on.
 */
export class AlmanacError extends Error {
  readonly code: ErrorCode;
  readonly category: ErrorCategory;

  constructor(category: ErrorCategory, code: ErrorCode, message: string, options: AlmanacErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.category = category;
  }
}

/** Bad input or configuration: the message tells the user what to change. */
export class UserError extends AlmanacError {
  constructor(code: ErrorCode, message: string, options: AlmanacErrorOptions = {}) {
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

  constructor(code: ErrorCode, message: string, options: ProviderErrorOptions) {
    super("provider", code, message, options);
    this.isRetryable = options.isRetryable;
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
  }
}

/** A bug or broken invariant in Almanac itself. */
export class InternalError extends AlmanacError {
  constructor(code: ErrorCode, message: string, options: AlmanacErrorOptions = {}) {
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

/** The codes core itself throws. */
export const coreErrorCodes = defineErrorCodes({
  "message.invalid": { category: "user", status: 400 },
  "session.key_invalid": { category: "user", status: 400 },
});

declare module "./errors.js" {
  interface AlmanacErrorCodes extends CodesOf<typeof coreErrorCodes> {}
}

/** The `code` of a Node.js system error (e.g. `ENOENT`), if it has one. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** True when `error` is a Node system error with one of the given `code`s (e.g. `ENOENT`). */
export function isErrnoCode(error: unknown, ...codes: string[]): boolean {
  const code = errnoCode(error);
  return code !== undefined && codes.includes(code);
}
