import { type AlmanacError, InternalError, isAlmanacError } from "@almanac/core";
import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from "openai/core/error";
import { ModelError, type ModelErrorKind } from "./model-error.js";
import { parseRetryAfterMs } from "./retry-after.js";

/** What the classifier needs to know about the call that failed. */
export interface ErrorContext {
  /** Which endpoint was called, for the message. */
  readonly operation: "chat" | "embeddings" | "transcription";
  readonly model: string;
  readonly baseURL: string;
  /** Only used to scrub the key out of provider text; never printed. */
  readonly apiKey: string;
  readonly timeoutMs: number;
  /** The caller's signal: when it is aborted the failure is `aborted`, whatever the SDK threw. */
  readonly callerSignal?: AbortSignal | undefined;
  /** True when our own per-attempt timer cut the request. */
  readonly timedOut?: boolean;
  /** Clock for Retry-After dates; the real time when absent. */
  readonly nowMs?: number;
}

const maxDetailLength = 500;

const headlines: Record<ModelErrorKind, string> = {
  auth: "Authentication failed",
  quota: "Quota exhausted",
  rate_limit: "Rate limited",
  context_length: "Prompt too long for the model's context window",
  network: "Network error",
  timeout: "Request timed out",
  server: "Provider server error",
  malformed_response: "Malformed response",
  bad_request: "Request rejected",
  aborted: "Request aborted by the caller",
};

const hints: Partial<Record<ModelErrorKind, string>> = {
  auth: "Check the API key and its permissions.",
  quota: "Check the provider account's plan and billing.",
  context_length: "Shorten the prompt or lower the output token limit.",
};

const contextLengthPattern =
  /maximum context length|context length|context window|too many tokens|prompt is too long|reduce the length of the messages/i;

/**
 * Turns anything a call threw into a {@link ModelError} (or an `InternalError` for what is no
 * provider failure, i.e. a bug), so retries, logs and callers can rely on `kind` and `code`.
 */
export function classifyError(error: unknown, context: ErrorContext): AlmanacError {
  if (error instanceof ModelError) return error;
  if (context.callerSignal?.aborted) return createModelError("aborted", context, { cause: error });
  if (context.timedOut) {
    return createModelError("timeout", context, {
      cause: error,
      detail: `no complete answer within ${context.timeoutMs} ms`,
    });
  }
  if (error instanceof APIUserAbortError) return createModelError("aborted", context, { cause: error });
  if (error instanceof APIConnectionTimeoutError) {
    return createModelError("timeout", context, {
      cause: error,
      detail: `no response within ${context.timeoutMs} ms`,
    });
  }
  if (error instanceof APIConnectionError) {
    return createModelError("network", context, { cause: error, detail: describeCauses(error) });
  }
  if (error instanceof APIError) return classifyApiError(error, context);
  if (error instanceof SyntaxError) {
    return createModelError("malformed_response", context, {
      cause: error,
      detail: `body is not valid JSON (${error.message})`,
    });
  }
  if (isAlmanacError(error)) {
    // fromOpenAIMessage rejects a provider message it cannot read: that is the provider's fault.
    if (error.code === "message.invalid") {
      return createModelError("malformed_response", context, { cause: error, detail: error.message });
    }
    return error;
  }
  if (error instanceof Error && error.name === "AbortError") {
    return createModelError("aborted", context, { cause: error });
  }
  if (isNetworkFailure(error)) {
    return createModelError("network", context, { cause: error, detail: describeCauses(error) });
  }
  return new InternalError(
    "llm.unexpected",
    redact(`Unexpected failure calling ${target(context)}: ${describeCauses(error)}`, context.apiKey),
    { cause: safeCause(error, context.apiKey) },
  );
}

function classifyApiError(error: APIError, context: ErrorContext): ModelError {
  const status = error.status;
  const detail = providerDetail(error);
  const providerCode = `${error.code ?? ""} ${error.type ?? ""}`;
  const retryAfterMs = parseRetryAfterMs(error.headers, context.nowMs);
  const options = {
    cause: error,
    detail,
    ...(status === undefined ? {} : { status }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  };
  const kind = kindOf(status, providerCode, detail);
  return createModelError(kind, context, options);
}

function kindOf(status: number | undefined, providerCode: string, detail: string): ModelErrorKind {
  const looksLikeContextLength =
    providerCode.includes("context_length_exceeded") || contextLengthPattern.test(detail);
  // No status: an error event inside a 200 stream. The provider gave up mid-answer.
  if (status === undefined) return looksLikeContextLength ? "context_length" : "server";
  if (status === 401 || status === 403) return "auth";
  if (status === 402) return "quota";
  if (status === 429) return providerCode.includes("insufficient_quota") ? "quota" : "rate_limit";
  if (status === 408) return "timeout";
  if (status === 409 || status >= 500) return "server";
  if (status >= 400) return looksLikeContextLength ? "context_length" : "bad_request";
  return "bad_request";
}

/** The provider's own words: `error.message` of the body, else the SDK's text without the status prefix. */
function providerDetail(error: APIError): string {
  const body: unknown = error.error;
  if (typeof body === "string" && body.trim() !== "") return body;
  if (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string") {
    return body.message;
  }
  const text = error.message.replace(/^\d{3}\s+/, "");
  return text === "status code (no body)" ? "no error body" : text;
}

interface CreateOptions {
  readonly cause?: unknown;
  readonly detail?: string;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly retryable?: boolean;
}

/** Builds a ModelError with the standard message shape; also used for malformed bodies found after parsing. */
export function createModelError(
  kind: ModelErrorKind,
  context: ErrorContext,
  options: CreateOptions = {},
): ModelError {
  const status = options.status === undefined ? "" : ` (HTTP ${options.status})`;
  // Redact before truncating: a cut could otherwise leave half a key behind.
  const detailText = truncate(
    redact(options.detail ?? "", context.apiKey)
      .trim()
      .replace(/[.\s]+$/, ""),
  );
  const detail = detailText === "" ? "" : `: ${detailText}`;
  const hint = hints[kind] === undefined ? "" : ` ${hints[kind]}`;
  const message = redact(
    `${headlines[kind]}${status} from ${target(context)}${detail}.${hint}`,
    context.apiKey,
  );
  return new ModelError(kind, message, {
    ...(options.cause === undefined ? {} : { cause: safeCause(options.cause, context.apiKey) }),
    ...(options.status === undefined ? {} : { status: options.status }),
    ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
    ...(options.retryable === undefined ? {} : { retryable: options.retryable }),
  });
}

function target(context: ErrorContext): string {
  const label =
    context.operation === "chat"
      ? "chat model"
      : context.operation === "embeddings"
        ? "embedding model"
        : "transcription model";
  return `${label} "${context.model}" at ${hostOf(context.baseURL)}`;
}

function hostOf(baseURL: string): string {
  try {
    return new URL(baseURL).host;
  } catch {
    return "(invalid base URL)";
  }
}

function truncate(text: string): string {
  return text.length <= maxDetailLength ? text : `${text.slice(0, maxDetailLength)}…`;
}

/** Removes the API key from text that may echo it (some proxies repeat request headers in errors). */
function redact(text: string, apiKey: string): string {
  return apiKey.length >= 4 ? text.split(apiKey).join("[redacted]") : text;
}

function safeCause(cause: unknown, apiKey: string): unknown {
  if (cause instanceof Error && apiKey.length >= 4 && describeCauses(cause).includes(apiKey)) {
    return new Error(redact(describeCauses(cause), apiKey));
  }
  return cause;
}

/** "fetch failed: connect ECONNREFUSED 127.0.0.1:1" from an error and its causes. */
function describeCauses(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth += 1) {
    const text = current instanceof Error ? current.message || current.name : String(current);
    if (text && !parts.includes(text)) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(": ");
}

function isNetworkFailure(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    // undici: "terminated" when the socket dies mid-body, "fetch failed" before a response.
    if (current.name === "TypeError" && /^(terminated|fetch failed)$/.test(current.message)) return true;
    const code = "code" in current ? current.code : undefined;
    if (typeof code === "string" && /^(E[A-Z]+|UND_ERR_\w+)$/.test(code)) return true;
    current = current.cause;
  }
  return false;
}
