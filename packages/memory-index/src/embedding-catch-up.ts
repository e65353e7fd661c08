import { describeError, isAlmanacError } from "@almanac/core";
import { embeddingInput } from "./chunk-markdown.js";
import type { EmbeddingGate } from "./embedding-gate.js";
import type { ChunkVector, MemoryIndexBackend } from "./types.js";

/** What one catch-up pass did. */
export interface CatchUpReport {
  /** Chunks that got a vector from the cache. */
  readonly fromCache: number;
  /** Chunks sent to the provider. */
  readonly embedded: number;
  /** Whether chunks are still pending (provider down, or the pass hit its limit). */
  readonly morePending: boolean;
  /** Set when the vectors do not fit the index (`index.dimensions_mismatch`): retrying will not help. */
  readonly blocked?: string;
}

/**
 * Gives vectors to chunks stored without one: cached vectors first, then the provider in batches.
 * Stops at the first failure (the gate's circuit breaker decides when to try again) or after
 * `maxChunks`, so a long backlog never holds up file changes waiting behind it.
 */
export async function catchUpEmbeddings(
  backend: MemoryIndexBackend,
  gate: EmbeddingGate,
  options: { readonly batchSize: number; readonly maxChunks: number },
): Promise<CatchUpReport> {
  const model = gate.modelName;
  let fromCache = 0;
  let embedded = 0;
  if (model === undefined) return { fromCache, embedded, morePending: false };
  while (fromCache + embedded < options.maxChunks) {
    if (gate.mode() === "text") return { fromCache, embedded, morePending: true };
    const pending = await backend.pendingChunks(options.batchSize);
    if (pending.length === 0) return { fromCache, embedded, morePending: false };
    const cached = await backend.cachedVectors(model, [...new Set(pending.map((chunk) => chunk.hash))]);
    const reused: ChunkVector[] = [];
    const missing = pending.filter((chunk) => {
      const vector = cached.get(chunk.hash);
      if (vector !== undefined) reused.push({ chunkId: chunk.id, hash: chunk.hash, vector });
      return vector === undefined;
    });
    try {
      if (reused.length > 0) await backend.setVectors(model, reused);
      fromCache += reused.length;
      if (missing.length === 0) continue;
      const outcome = await gate.embed(missing.map((chunk) => embeddingInput(chunk)));
      if (!outcome.ok) return { fromCache, embedded, morePending: true };
      await backend.setVectors(
        model,
        missing.map((chunk, index) => ({
          chunkId: chunk.id,
          hash: chunk.hash,
          vector: outcome.vectors[index]!,
        })),
      );
      embedded += missing.length;
    } catch (error) {
      // A vector size that does not fit the index is a configuration problem: stop, say so, keep text search.
      if (isAlmanacError(error) && error.code === "index.dimensions_mismatch") {
        return { fromCache, embedded, morePending: true, blocked: describeError(error) };
      }
      throw error;
    }
  }
  return { fromCache, embedded, morePending: true };
}
