import { type Logger, silentLogger, UserError } from "@almanac/core";
import type OpenAI from "openai";
import { createModelFetch, type ProxySettings } from "./model-fetch.js";
import { abortableSleep, type RetryPolicy, type Sleep } from "./retry.js";

/** Settings shared by the chat model and the embedder: where to call, with what key, how patiently. */
export interface EndpointConfig {
  /** OpenAI-compatible base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  readonly baseURL: string;
  /** Sent as `Authorization: Bearer`; empty for local servers that need none. Never logged. */
  readonly apiKey: string;
  /** Model name sent with every request. */
  readonly model: string;
  /** Extra headers on every request (e.g. OpenRouter's `HTTP-Referer`). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Per-attempt timeout in milliseconds (default 120000). For streams it limits silence between chunks. */
  readonly timeoutMs?: number;
  /** Retries after the first attempt (default 3). */
  readonly maxRetries?: number;
  /** Base of the exponential backoff (default 500 ms). */
  readonly retryBaseDelayMs?: number;
  /** Ceiling of the computed backoff (default 30000 ms). */
  readonly retryMaxDelayMs?: number;
  /** A provider's Retry-After longer than this is not waited for; the error surfaces (default 60000 ms). */
  readonly maxRetryAfterMs?: number;
  /** The proxy requests go through (default none: direct). */
  readonly proxy?: ProxySettings;
  readonly logger?: Logger;
  /** Injectable wait between retries (tests); the default is a real timer that aborts with the signal. */
  readonly sleep?: Sleep;
}

/** An {@link EndpointConfig} with defaults applied, and the SDK client on demand. */
export interface ResolvedEndpoint {
  /**
   * The SDK client, built on the first request: loading the `openai` package (~90 ms, ~13 MB resident) is
   * not start-up work, and a server that has not called its model yet never pays for it.
   */
  readonly client: () => Promise<OpenAI>;
  readonly baseURL: string;
  readonly apiKey: string;
  readonly model: string;
  readonly timeoutMs: number;
  readonly policy: RetryPolicy;
  readonly logger: Logger;
  readonly sleep: Sleep;
}

/** Sent when the configured key is empty: the SDK refuses to run without one. */
const placeholderApiKey = "no-key";

/**
 * Validates the shared settings (throwing `llm.config_invalid` naming the key); the client is built on the
 * first request. The SDK's own retries are off (`maxRetries: 0`): we retry ourselves, see `retry.ts`.
 */
export function resolveEndpoint(config: EndpointConfig, what: string): ResolvedEndpoint {
  requireText(config.model, "model", what);
  requireText(config.baseURL, "baseURL", what);
  if (!URL.canParse(config.baseURL)) invalid(what, "baseURL", "must be an absolute URL", config.baseURL);
  const timeoutMs = integerAtLeast(config.timeoutMs, 120_000, 1, "timeoutMs", what);
  const policy: RetryPolicy = {
    maxRetries: integerAtLeast(config.maxRetries, 3, 0, "maxRetries", what),
    baseDelayMs: integerAtLeast(config.retryBaseDelayMs, 500, 0, "retryBaseDelayMs", what),
    maxDelayMs: integerAtLeast(config.retryMaxDelayMs, 30_000, 0, "retryMaxDelayMs", what),
    maxRetryAfterMs: integerAtLeast(config.maxRetryAfterMs, 60_000, 0, "maxRetryAfterMs", what),
  };
  let client: Promise<OpenAI> | undefined;
  const loadClient = (): Promise<OpenAI> => {
    client ??= import("openai").then(
      ({ default: OpenAIClient }) =>
        new OpenAIClient({
          baseURL: config.baseURL,
          apiKey: config.apiKey === "" ? placeholderApiKey : config.apiKey,
          // Explicit nulls so OPENAI_* environment variables never leak into a configured endpoint.
          organization: null,
          project: null,
          adminAPIKey: null,
          webhookSecret: null,
          defaultHeaders: { ...config.headers },
          maxRetries: 0,
          timeout: timeoutMs,
          // We log retries and failures ourselves, with the key kept out.
          logLevel: "off",
          // Keep-alive connections through the configured proxy, the same on every Node version.
          fetch: createModelFetch(config.proxy),
        }),
      (error: unknown) => {
        client = undefined; // a failed load is tried again by the next request
        throw error;
      },
    );
    return client;
  };
  return {
    client: loadClient,
    baseURL: config.baseURL,
    apiKey: config.apiKey,
    model: config.model,
    timeoutMs,
    policy,
    logger: config.logger ?? silentLogger,
    sleep: config.sleep ?? abortableSleep,
  };
}

function requireText(value: string, key: string, what: string): void {
  if (typeof value !== "string" || value.trim() === "")
    invalid(what, key, "must be a non-empty string", value);
}

/** Validates an optional integer setting; `what` names the config section (e.g. "chat model"). */
export function integerAtLeast(
  value: number | undefined,
  fallback: number,
  minimum: number,
  key: string,
  what: string,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < minimum) {
    invalid(what, key, `must be an integer of at least ${minimum}`, value);
  }
  return value;
}

function invalid(what: string, key: string, rule: string, value: unknown): never {
  throw new UserError(
    "llm.config_invalid",
    `Invalid ${what} setting "${key}": ${rule}, got ${String(value)}.`,
  );
}
