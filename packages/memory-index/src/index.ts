// The memory index and search: chunking, analysis, backends, search, the memory tools, the watcher and indexer.
export { type ChunkMarkdownOptions, chunkMarkdown, embeddingInput } from "./chunk-markdown.js";
export { type CircuitState, createCircuitBreaker } from "./circuit-breaker.js";
export {
  createEmbeddingGate,
  type EmbeddingGate,
  type EmbeddingGateOptions,
  type EmbeddingGateStatus,
  type EmbedOutcome,
  isEmbeddingGate,
} from "./embedding-gate.js";
export * from "./error-codes.js";
export { type ScoringOptions, searchableText } from "./hybrid-score.js";
export {
  createMemoryIndexer,
  type MemoryIndexer,
  type MemoryIndexerOptions,
  type MemoryIndexStatus,
  type SyncOptions,
  type SyncProgress,
  type SyncReport,
} from "./memory-indexer.js";
export {
  createMemorySearch,
  type MemorySearch,
  type MemorySearchConfig,
  type SearchOptions,
} from "./memory-search.js";
export { memorySource } from "./memory-source.js";
export { createMemoryTools, type MemoryToolsOptions } from "./memory-tools.js";
// createQdrantIndex is imported from "@almanac/memory-index/qdrant", only where Qdrant is configured (its client is
// ~20 MB resident): re-exported here, it would be bundled into every server start.
export { createSqliteIndex, type SqliteIndexOptions } from "./sqlite-index.js";
export { type AnalyzedQuery, analyzeQuery, analyzeText, type QueryConcept } from "./text-analysis.js";
export type {
  BackendHit,
  BackendQuery,
  BackendStats,
  ChunkEmbeddings,
  ChunkVector,
  IndexChunk,
  IndexedFile,
  MemoryChunk,
  MemoryIndexBackend,
  MemorySearchResponse,
  MemorySearchResult,
  MemorySource,
  SearchMode,
  StoredChunk,
  TermStatistics,
} from "./types.js";
