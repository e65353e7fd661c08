export * from "./memory-files/index.js";
export * from "./memory-index/index.js";
export {
  dailyLogPath,
  isPathInScope,
  type MemoryScope,
  matchesPathFilter,
  OWNER_SCOPE,
  type ScopePathFilter,
  scopePathFilter,
  sharedScope,
  sharedScopeFolder,
  sharedScopePrefix,
} from "./memory-scope.js";
export * from "./summarizer/index.js";
