import { describeError, type Embedder, type Logger, silentLogger } from "@almanac/core";
import { type CircuitBreakerOptions, type CircuitState, createCircuitBreaker } from "./circuit-breaker.js";
import type { SearchMode } from "./types.js";

/** Options of {@link createEmbeddingGate}. */
export interface EmbeddingGateOptions extends CircuitBreakerOptions {
  /** The provider; absent means full-text only. */
  readonly embedder?: Embedder;
  readonly logger?: Logger;
}

/** What the gate knows about the provider, for `status()` and the admin API. */
export interface EmbeddingGateStatus {
  readonly configured: boolean;
  readonly model: string | undefined;
  readonly mode: SearchMode;
  readonly circuit: CircuitState;
  readonly consecutiveFailures: number;
  /** The last failure, until a call succeeds. */
  readonly lastError: string | undefined;
}

/** The outcome of one embedding attempt: vectors, or why there are none (never a thrown error). */
export type EmbedOutcome =
  | { readonly ok: true; readonly vectors: number[][] }
  | { readonly ok: false; readonly reason: string };

/**
 * An {@link Embedder} behind a circuit breaker, shared by the indexer and the search so both agree
 * on the mode. It never throws: failures come back as `{ ok: false }`, and the switch between
 * hybrid and full-text mode is logged once per change, not once per query.
 */
export interface EmbeddingGate {
  readonly kind: "embedding-gate";
  readonly configured: boolean;
  readonly modelName: string | undefined;
  /** `hybrid` while the provider may be called, `text` when none is configured or the circuit is open. */
  mode(): SearchMode;
  status(): EmbeddingGateStatus;
  embed(texts: readonly string[], options?: { readonly signal?: AbortSignal }): Promise<EmbedOutcome>;
  /** Called with the new mode whenever it changes; returns an unsubscribe function. */
  onModeChange(listener: (mode: SearchMode) => void): () => void;
}

/** Type guard: a gate (as opposed to a bare {@link Embedder}). */
export function isEmbeddingGate(value: Embedder | EmbeddingGate): value is EmbeddingGate {
  return "kind" in value && value.kind === "embedding-gate";
}

/** Wraps an embedder (or nothing) in a gate; see {@link EmbeddingGate}. */
export function createEmbeddingGate(options: EmbeddingGateOptions = {}): EmbeddingGate {
  const { embedder } = options;
  const logger = (options.logger ?? silentLogger).child({ component: "memory-embeddings" });
  const breaker = createCircuitBreaker(options);
  const listeners = new Set<(mode: SearchMode) => void>();
  let lastError: string | undefined;
  let available = embedder !== undefined;

  if (embedder === undefined) {
    logger.info({}, "no embedding provider configured: memory search is full-text only");
  }

  const mode = (): SearchMode => (embedder !== undefined && breaker.state() !== "open" ? "hybrid" : "text");

  const settle = (nowAvailable: boolean): void => {
    if (nowAvailable === available) return;
    available = nowAvailable;
    if (nowAvailable) {
      logger.info(
        { model: embedder?.modelName },
        "embedding provider is back: memory search is hybrid again",
      );
    } else {
      logger.warn(
        { model: embedder?.modelName, error: lastError, failures: breaker.failures() },
        "embedding provider unavailable: memory search is full-text only until it recovers",
      );
    }
    for (const listener of listeners) listener(nowAvailable ? "hybrid" : "text");
  };

  return {
    kind: "embedding-gate",
    configured: embedder !== undefined,
    modelName: embedder?.modelName,
    mode,
    status: () => ({
      configured: embedder !== undefined,
      model: embedder?.modelName,
      mode: mode(),
      circuit: breaker.state(),
      consecutiveFailures: breaker.failures(),
      lastError,
    }),

    async embed(texts, callOptions = {}) {
      if (embedder === undefined) return { ok: false, reason: "no embedding provider is configured" };
      if (texts.length === 0) return { ok: true, vectors: [] };
      if (!breaker.tryAcquire()) {
        return {
          ok: false,
          reason: `the embedding provider is unavailable (${lastError ?? "recent failures"})`,
        };
      }
      try {
        const vectors = await embedder.embed(texts, callOptions.signal ? { signal: callOptions.signal } : {});
        breaker.recordSuccess();
        lastError = undefined;
        settle(true);
        return { ok: true, vectors };
      } catch (error) {
        if (
          callOptions.signal?.aborted === true &&
          !(
            callOptions.signal.reason instanceof DOMException &&
            callOptions.signal.reason.name === "TimeoutError"
          )
        ) {
          breaker.recordCancelled();
          return { ok: false, reason: "the embedding call was cancelled" };
        }
        lastError = describeError(error);
        breaker.recordFailure();
        logger.debug({ error: lastError, failures: breaker.failures() }, "embedding call failed");
        if (breaker.state() === "open") settle(false);
        return { ok: false, reason: `the embedding provider failed (${lastError})` };
      }
    },

    onModeChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
