import { ProviderError } from "@almanac/core";

/** What went wrong talking to a model endpoint; decides whether a retry can help. */
export type ModelErrorKind =
  | "auth"
  | "quota"
  | "rate_limit"
  | "context_length"
  | "network"
  | "timeout"
  | "server"
  | "malformed_response"
  | "bad_request"
  | "aborted";

/** Kinds a retry may fix; the others fail the same way again (or were asked for, like `aborted`). */
const retryableKinds: ReadonlySet<ModelErrorKind> = new Set<ModelErrorKind>([
  "rate_limit",
  "network",
  "timeout",
  "server",
  "malformed_response",
]);

/** True when a failure of this kind is worth another attempt. */
export function isRetryableKind(kind: ModelErrorKind): boolean {
  return retryableKinds.has(kind);
}

/** Options of a {@link ModelError}. */
export interface ModelErrorOptions {
  readonly cause?: unknown;
  readonly status?: number;
  /** Delay the provider asked for (Retry-After), in milliseconds. */
  readonly retryAfterMs?: number;
  /** Overrides the kind's default when this one failure will not change on retry (e.g. a wrong vector size). */
  readonly retryable?: boolean;
}

/**
 * A classified failure of a chat or embedding call, with code `llm.<kind>`.
 * The message names the model, the endpoint host and the provider's words, never the API key.
 */
export class ModelError extends ProviderError {
  readonly kind: ModelErrorKind;

  constructor(kind: ModelErrorKind, message: string, options: ModelErrorOptions = {}) {
    super(`llm.${kind}`, message, {
      isRetryable: options.retryable ?? isRetryableKind(kind),
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      ...(options.status === undefined ? {} : { status: options.status }),
      ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
    });
    this.kind = kind;
  }
}

/** Type guard for {@link ModelError}, optionally of one kind. */
export function isModelError(error: unknown, kind?: ModelErrorKind): error is ModelError {
  return error instanceof ModelError && (kind === undefined || error.kind === kind);
}
