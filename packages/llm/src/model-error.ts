import { type CodesOf, defineErrorCodes, ProviderError } from "@almanac/core";

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

/** Every code the llm package throws: `llm.<kind>` of a {@link ModelError}, and its own configuration and bugs. */
export const llmErrorCodes = defineErrorCodes({
  "llm.auth": {
    category: "provider",
    forPeople:
      "Sorry, the language model refused my credentials. The owner has to check the model's API key.",
  },
  "llm.quota": {
    category: "provider",
    forPeople: "Sorry, the language model's quota is used up. Please try again later.",
  },
  "llm.rate_limit": {
    category: "provider",
    forPeople: "Sorry, the language model is busy right now. Please try again in a moment.",
  },
  "llm.context_length": { category: "provider", status: 502 },
  "llm.network": { category: "provider" },
  "llm.timeout": { category: "provider", status: 504 },
  "llm.server": { category: "provider" },
  "llm.malformed_response": { category: "provider" },
  "llm.bad_request": { category: "provider" },
  "llm.aborted": { category: "user", status: 499 },
  "llm.config_invalid": { category: "user" },
  "llm.unexpected": { category: "internal" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof llmErrorCodes> {}
}

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
