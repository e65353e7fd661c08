import { describeError, type Embedder, isAlmanacError, type Logger, silentLogger } from "@almanac/core";
import type { ScopePathFilter } from "@almanac/memory-files";
import { createEmbeddingGate, type EmbeddingGate, isEmbeddingGate } from "./embedding-gate.js";
import { type ScoredHit, type ScoringOptions, scoreHits } from "./hybrid-score.js";
import { passageDate } from "./memory-source.js";
import { makeSnippet } from "./snippet.js";
import { analyzeQuery } from "./text-analysis.js";
import { planTextQuery, type TextQueryPlan } from "./text-query-plan.js";
import type {
  BackendHit,
  MemoryIndexBackend,
  MemorySearchResponse,
  MemorySearchResult,
  SearchMode,
} from "./types.js";

/** Options of {@link createMemorySearch}. */
export interface MemorySearchConfig {
  readonly backend: MemoryIndexBackend;
  /** The embedding provider, or a gate shared with the indexer; absent means full-text only. */
  readonly embedder?: Embedder | EmbeddingGate;
  readonly logger?: Logger;
  /** Current time in ms, for the recency boost (default `Date.now`). */
  readonly clock?: () => number;
  /** Results returned when the caller gives no `maxResults` (default 8). */
  readonly maxResults?: number;
  /**
   * Score floor when the caller gives no `minScore` (default: none, see `unmatchedMinScore`). Exact keyword hits
   * ignore it. A fixed floor hides answers: a passage that shares only a name with a question may be the one
   * that answers it (docs/memory-search.md, "Filtering").
   */
  readonly minScore?: number;
  /**
   * With no `minScore` from the caller or here: the lowest score of a hit that shares no meaningful (non-stop)
   * word with the query, i.e. one found by its vector alone (default 0.25). Hits sharing one are all kept.
   */
  readonly unmatchedMinScore?: number;
  /** Candidates taken from each side, as a multiple of `maxResults` (default 4, at least 24). */
  readonly candidateMultiplier?: number;
  /** Longest wait for the query's embedding before answering full-text only (default 5000 ms). */
  readonly queryEmbeddingTimeoutMs?: number;
  /**
   * Most chunks the full-text side may rank by BM25 per query (default 5000): rarer terms are
   * matched first and common ones left to scoring, which bounds latency on large indexes.
   */
  readonly textMatchBudget?: number;
  /** Longest snippet, in characters (default 700). */
  readonly snippetChars?: number;
  readonly scoring?: ScoringOptions;
  /**
   * Why the index may be incomplete right now (e.g. it is being rebuilt after a repair), or undefined.
   * Said in the `note` of every answer meanwhile, so a missing result is not taken for a missing fact.
   */
  readonly indexNote?: () => string | undefined;
}

/** Per-call options of {@link MemorySearch.search}. */
export interface SearchOptions {
  readonly maxResults?: number;
  /**
   * Drop hits scoring under this, except exact keyword hits. Default: the search's `minScore`, or else keep every
   * hit sharing a meaningful word with the query (see {@link MemorySearchConfig.unmatchedMinScore}).
   */
  readonly minScore?: number;
  readonly signal?: AbortSignal;
  /** Only files passing this filter (the caller's memory scope); default: every indexed file. */
  readonly paths?: ScopePathFilter;
  /** Longest snippet for this search, in characters (default: the search's `snippetChars`). */
  readonly snippetChars?: number;
}

/** Hybrid search over the memory index. */
export interface MemorySearch {
  /** Never fails because embeddings fail: it answers full-text only and says so in `note`. */
  search(query: string, options?: SearchOptions): Promise<MemorySearchResponse>;
  /** The mode a search would use now. */
  mode(): SearchMode;
  /** The gate this search embeds through (share it with the indexer). */
  readonly embeddings: EmbeddingGate;
}

/**
 * The floor. With a `minScore`, a hit under it goes unless it is an exact keyword hit. Without one (the default),
 * every hit sharing a meaningful word with the query stays, however low it scores (the answer to a question may
 * share only a name with it, and ranking already put the likelier passages first); a hit sharing none, found by
 * its vector alone, stays from `unmatchedMinScore` up. Measured with bench/conversational-retrieval.ts.
 */
function keepsHit(
  hit: ScoredHit,
  floor: { readonly minScore: number | undefined; readonly unmatchedMinScore: number },
): boolean {
  if (floor.minScore !== undefined) return hit.score >= floor.minScore || hit.exact;
  return hit.coverage > 0 || hit.score >= floor.unmatchedMinScore;
}

function textNote(reason: string): string {
  return `Full-text search only: ${reason}. Notes that say the same thing in other words may be missed.`;
}

/**
 * Creates the hybrid search: full-text and vector candidates from the backend, scored on one scale
 * (see `scoreHits`), then the floor (see {@link keepsHit}) and `maxResults`.
 */
export function createMemorySearch(config: MemorySearchConfig): MemorySearch {
  const { backend } = config;
  const logger = (config.logger ?? silentLogger).child({ component: "memory-search" });
  const embeddings =
    config.embedder === undefined
      ? createEmbeddingGate({ logger })
      : isEmbeddingGate(config.embedder)
        ? config.embedder
        : createEmbeddingGate({ embedder: config.embedder, logger });
  const clock = config.clock ?? Date.now;
  const defaultMaxResults = config.maxResults ?? 8;
  const defaultMinScore = config.minScore;
  const unmatchedMinScore = config.unmatchedMinScore ?? 0.25;
  const multiplier = config.candidateMultiplier ?? 4;
  const timeoutMs = config.queryEmbeddingTimeoutMs ?? 5000;
  const textMatchBudget = config.textMatchBudget ?? 5000;
  const snippetChars = config.snippetChars ?? 700;
  let mismatchLogged = false;

  async function queryVector(query: string, signal: AbortSignal | undefined) {
    if (embeddings.mode() === "text") {
      const reason = embeddings.configured
        ? `the embedding provider is unavailable (${embeddings.status().lastError ?? "recent failures"})`
        : "no embedding provider is configured";
      return { vector: undefined, reason };
    }
    const timeout = AbortSignal.timeout(timeoutMs);
    const outcome = await embeddings.embed([query], {
      signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]),
    });
    if (!outcome.ok) return { vector: undefined, reason: outcome.reason };
    return { vector: outcome.vectors[0], reason: undefined };
  }

  /** Text candidates per the plan (topped up when short), plus vector candidates when there is a vector. */
  async function candidates(
    plan: TextQueryPlan,
    vector: readonly number[] | undefined,
    limit: number,
    paths: ScopePathFilter | undefined,
  ) {
    const within = paths === undefined ? {} : { paths };
    const run = async (withVector: readonly number[] | undefined): Promise<BackendHit[]> => {
      const primary = plan.primary ?? { terms: [] };
      const hits = [
        ...(await backend.search({
          ...primary,
          limit,
          ...within,
          ...(withVector === undefined ? {} : { vector: withVector }),
        })),
      ];
      const textHits = hits.filter((hit) => hit.textScore !== undefined).length;
      if (plan.topUp === undefined || textHits >= limit) return hits;
      const seen = new Set(hits.map((hit) => hit.chunk.id));
      const more = await backend.search({ ...plan.topUp, limit: limit - textHits, ...within });
      return [...hits, ...more.filter((hit) => !seen.has(hit.chunk.id))];
    };
    try {
      return { hits: await run(vector) };
    } catch (error) {
      if (vector === undefined || !isAlmanacError(error) || error.code !== "index.dimensions_mismatch")
        throw error;
      if (!mismatchLogged) {
        mismatchLogged = true;
        logger.error(
          { error: describeError(error) },
          "query vector does not fit the index: searching full-text only",
        );
      }
      return {
        hits: await run(undefined),
        reason: "the index's vectors do not match the embedding model (reindex needed)",
      };
    }
  }

  return {
    embeddings,
    mode: () => embeddings.mode(),

    async search(query, options = {}) {
      const maxResults = Math.max(1, Math.floor(options.maxResults ?? defaultMaxResults));
      const floor = { minScore: options.minScore ?? defaultMinScore, unmatchedMinScore };
      const analyzed = analyzeQuery(query.trim());
      if (analyzed.concepts.length === 0) {
        return { results: [], mode: embeddings.mode(), note: "The query has no words to search for." };
      }
      // The query's embedding (a network call) is under way while the index is consulted.
      const embedding = queryVector(analyzed.text, options.signal);
      // Stop words only matter when the query has nothing else; skipping them saves the lookups.
      const stop = new Set(
        analyzed.concepts.filter((concept) => concept.stopWord).flatMap((concept) => concept.terms),
      );
      const meaningful = analyzed.terms.filter((term) => !stop.has(term));
      const statistics = await backend.termStatistics(meaningful.length > 0 ? meaningful : analyzed.terms);
      const plan = planTextQuery(analyzed, statistics, textMatchBudget);
      const embedded = await embedding;
      const limit = Math.max(24, maxResults * multiplier);
      const found: { hits: readonly BackendHit[]; reason?: string } = await candidates(
        plan,
        embedded.vector,
        limit,
        options.paths,
      );
      const reason = found.reason ?? embedded.reason;
      const mode: SearchMode = reason === undefined ? "hybrid" : "text";
      const scored = scoreHits(analyzed, found.hits, {
        mode,
        statistics,
        now: clock(),
        ...(config.scoring === undefined ? {} : { options: config.scoring }),
      });
      const results: MemorySearchResult[] = scored
        .filter((hit) => keepsHit(hit, floor))
        .slice(0, maxResults)
        .map((hit) => {
          // The range is the chunk that matched (what `memory_get` reads back, the snippet's lines among
          // them); the snippet shows its best-matching lines. Narrowing the range to the snippet was measured:
          // it hid answers a line or two beside the shown window (bench/conversational-retrieval.ts measured worse recall).
          const snippet = makeSnippet(
            hit.chunk,
            analyzed,
            options.snippetChars ?? snippetChars,
            statistics,
            hit.occurrences,
          );
          return {
            path: hit.chunk.path,
            startLine: hit.chunk.startLine,
            endLine: hit.chunk.endLine,
            score: Math.round(hit.score * 1000) / 1000,
            snippet: snippet.text,
            source: hit.chunk.source,
            date: passageDate(hit.chunk.path, hit.chunk.updatedAt),
            mode,
          };
        });
      const note = [config.indexNote?.(), reason === undefined ? undefined : textNote(reason)]
        .filter((part) => part !== undefined)
        .join(" ");
      return note === "" ? { results, mode } : { results, mode, note };
    },
  };
}
