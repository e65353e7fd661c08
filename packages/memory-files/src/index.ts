// Memory files: which workspace paths are memory (one rule), how to find them (one walker), whose they are
// (scopes), and how they are read and written (the store: backups, the shrink guard, staged durable writes).
export { hashContent } from "./content-hash.js";
export * from "./error-codes.js";
export {
  type ForgottenPhrase,
  ForgottenRegistry,
  mentionsAny,
  normalizePhrase,
  withoutForgotten,
} from "./forget.js";
export { listMemoryFiles } from "./list-memory-files.js";
export {
  assertTimeZone,
  type DayGroup,
  defaultTimeZone,
  groupMessagesByLocalDate,
  localDateOf,
  localTimeOf,
  previousDate,
} from "./local-date.js";
export {
  buildMemoryContext,
  MEMORY_GUIDE,
  type MemoryContextOptions,
  type MemoryFileReader,
  memoryContextFiles,
  memoryGuideFor,
  sharedMemoryGuide,
} from "./memory-context.js";
export {
  createMemoryFileStore,
  DEFAULT_SHRINK_GUARD,
  isDestructiveShrink,
  type MemoryFileContent,
  type MemoryFileInfo,
  type MemoryFileStore,
  type MemoryFileStoreOptions,
  type MemoryWriteOptions,
  type MemoryWriteResult,
  type ShrinkGuard,
} from "./memory-file-store.js";
export {
  isInMemoryDirectory,
  isInSharedDirectory,
  isMemoryFilePath,
  isPrivateMemoryPath,
  isSharedMemoryPath,
  MEMORY_DIRECTORY,
  MEMORY_FILE,
  SHARED_DIRECTORY,
  toRelativePath,
} from "./memory-paths.js";
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
export { type StagedMemoryFile, stageMemoryFile } from "./staged-memory-file.js";
