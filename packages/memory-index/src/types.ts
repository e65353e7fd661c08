import type { ScopePathFilter } from "@almanac/memory-files";

/** Where a memory file sits: `MEMORY.md`, a dated daily log `memory/YYYY-MM-DD.md`, or any other note under `memory/`. */
export type MemorySource = "memory" | "daily" | "notes";

/** How a search was answered: fused vector + full text, or full text only. */
export type SearchMode = "hybrid" | "text";

/** One piece of a Markdown memory file, cut on whole lines. */
export interface MemoryChunk {
  /** Stable id: path, line range and content hash (restarts and re-syncs give the same id). */
  readonly id: string;
  /** Workspace-relative path with `/` separators, e.g. `memory/2025-03-01.md`. */
  readonly path: string;
  /** First line, 1-based. */
  readonly startLine: number;
  /** Last line, 1-based, inclusive. */
  readonly endLine: number;
  /** Heading path in effect at the chunk's first line, outermost first (`["Projects", "Apollo"]`). */
  readonly headings: readonly string[];
  /** The chunk's lines joined with `\n`. */
  readonly text: string;
  /** SHA-256 (hex) of {@link embeddingInput}: what the embedding cache is keyed by, with the model. */
  readonly hash: string;
  /** Tokens of `text`, as counted by the chunker's token counter. */
  readonly tokens: number;
}

/** A chunk with its analysed index terms (see `analyzeText`), ready for a backend. */
export interface IndexChunk extends MemoryChunk {
  /** Index terms in text order, with repeats (term frequency matters). */
  readonly terms: readonly string[];
  /**
   * `terms` joined by single spaces, when whoever analysed the chunk made that form (the index worker sends
   * it instead of the list: copying one string between threads is a third of copying ~230); the SQLite
   * backend stores it as is.
   */
  readonly termText?: string;
  /** Its scoring length (`scoringLength`), when the caller measured it already; backends measure it otherwise. */
  readonly textLength?: number;
}

/** What the index remembers about a file, to sync incrementally. */
export interface IndexedFile {
  readonly path: string;
  /** SHA-256 (hex) of the file's bytes. */
  readonly hash: string;
  readonly mtimeMs: number;
  readonly size: number;
  readonly source: MemorySource;
}

/** A chunk as stored in a backend. */
export interface StoredChunk {
  readonly id: string;
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly headings: readonly string[];
  readonly text: string;
  readonly hash: string;
  readonly source: MemorySource;
  /** Modification time of the file the chunk came from (ms since epoch). */
  readonly updatedAt: number;
  /**
   * Length of its searchable text as scoring measures it (`scoringLength`), when the backend stored it at
   * indexing time; scoring measures it itself otherwise.
   */
  readonly textLength?: number;
}

/** Vectors for some of the chunks of an upsert, aligned with the chunks (`undefined` = not embedded yet). */
export interface ChunkEmbeddings {
  /** Embedding model the vectors come from (the cache key, with the chunk hash). */
  readonly model: string;
  readonly vectors: readonly (readonly number[] | undefined)[];
}

/** One file's replacement in {@link MemoryIndexBackend.upsertFiles}: what `upsertFile` takes. */
export interface FileUpsert {
  readonly file: IndexedFile;
  readonly chunks: readonly IndexChunk[];
  readonly embeddings?: ChunkEmbeddings;
}

/** A vector for one stored chunk, from a background catch-up. */
export interface ChunkVector {
  readonly chunkId: string;
  readonly hash: string;
  readonly vector: readonly number[];
}

/** One search request to a backend: analysed terms and, in hybrid mode, the query vector. */
export interface BackendQuery {
  /** Analysed query terms to match (already pruned of stop words where that helps). */
  readonly terms: readonly string[];
  /** Query vector; absent in text-only mode. */
  readonly vector?: readonly number[];
  /** Candidates wanted from each side. */
  readonly limit: number;
  /**
   * When given, the text side matches chunks holding a term of every group (a concept and its
   * alternatives) instead of any of `terms`. Backends without this ability may use `terms`.
   */
  readonly allOf?: readonly (readonly string[])[];
  /**
   * Rank text matches by BM25 (default true). `false` returns matching chunks newest first: for
   * broad queries, where ranking every match would cost time in proportion to the matches.
   */
  readonly rank?: boolean;
  /**
   * Only chunks whose path passes this filter (the session's memory scope). Applied before ranking and
   * limiting, so a small scope is never crowded out by others.
   */
  readonly paths?: ScopePathFilter;
}

/** A candidate a backend found, with whatever raw evidence it has; the search layer scores it. */
export interface BackendHit {
  readonly chunk: StoredChunk;
  /** Raw full-text relevance (higher is better, e.g. negated BM25); absent when not measured. */
  readonly textScore?: number;
  /** Cosine similarity to the query vector, for every hit that has a vector, when a vector was given. */
  readonly vectorSimilarity?: number;
}

/** Document frequencies of terms, for IDF weights. */
export interface TermStatistics {
  /** Chunks in the index. */
  readonly total: number;
  /** Chunks holding each term (absent term = 0). */
  readonly documents: ReadonlyMap<string, number>;
}

/** Counters of a backend. */
export interface BackendStats {
  readonly files: number;
  readonly chunks: number;
  readonly embeddedChunks: number;
  /** Vector size of the index, once known. */
  readonly dimensions: number | undefined;
  /** Model the stored vectors come from, once known. */
  readonly vectorModel: string | undefined;
}

/**
 * Storage and retrieval of memory chunks: full text and vectors. Every implementation passes the
 * shared contract suite (`packages/memory-index/test/backend-contract.ts`). Mutations of one file are atomic: readers see
 * the old chunks or the new ones, never a mix.
 */
export interface MemoryIndexBackend {
  /** `sqlite`, `qdrant`: shown in status and logs. */
  readonly kind: string;
  /** Replaces every chunk of `file.path` with `chunks`; vectors are stored (and cached) where given. */
  upsertFile(file: IndexedFile, chunks: readonly IndexChunk[], embeddings?: ChunkEmbeddings): Promise<void>;
  /**
   * {@link upsertFile} for several files at once (a sync's batch). Each file stays atomic; a backend may
   * also commit the batch as one (SQLite: one transaction, which is most of the speed of a full sync).
   */
  upsertFiles(files: readonly FileUpsert[]): Promise<void>;
  /** Removes a file and its chunks; unknown paths are a no-op. */
  deleteFile(path: string): Promise<void>;
  /** What the index holds about a file, or undefined. */
  fileState(path: string): Promise<IndexedFile | undefined>;
  /** Every indexed file. */
  listFiles(): Promise<readonly IndexedFile[]>;
  /** Full-text and (when a vector is given) vector candidates, merged by chunk. */
  search(query: BackendQuery): Promise<readonly BackendHit[]>;
  /** Document frequencies of `terms` (for IDF weights in scoring). */
  termStatistics(terms: readonly string[]): Promise<TermStatistics>;
  /** Up to `limit` chunks stored without a vector, oldest first. */
  pendingChunks(limit: number): Promise<readonly StoredChunk[]>;
  /** Stores vectors for chunks that lack them; ids no longer present (file edited meanwhile) are skipped. */
  setVectors(model: string, vectors: readonly ChunkVector[]): Promise<void>;
  /** Vectors already computed by `model` for these content hashes (the embedding cache). */
  cachedVectors(model: string, hashes: readonly string[]): Promise<ReadonlyMap<string, readonly number[]>>;
  /** Drops every vector (chunks stay, marked pending): used when the embedding model changes. */
  clearVectors(): Promise<void>;
  /** Drops every file and chunk (the embedding cache stays, so a rebuild does not re-embed). */
  clear(): Promise<void>;
  stats(): Promise<BackendStats>;
  close(): Promise<void>;
}

/** One `memory_search` hit. */
export interface MemorySearchResult {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  /** Relevance in [0, 1]; see docs/memory-search.md for how it is computed. */
  readonly score: number;
  readonly snippet: string;
  readonly source: MemorySource;
  /**
   * `YYYY-MM-DD`: the daily log's own date, or the day (UTC) the file was last modified (MEMORY.md, notes).
   * When passages disagree, the newest statement is the one that holds now.
   */
  readonly date: string;
  readonly mode: SearchMode;
}

/** The answer to one search: results, the mode used and, when degraded, a note saying why. */
export interface MemorySearchResponse {
  readonly results: readonly MemorySearchResult[];
  readonly mode: SearchMode;
  /** Plain-language note, e.g. why the search ran full-text only. */
  readonly note?: string;
}
