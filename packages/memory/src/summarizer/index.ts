export { hashContent } from "./content-hash.js";
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
export { probeWritable, type StorageErrno, storageErrnoOf } from "./storage-errno.js";
export { createSummarizer, type SummarizerOptions } from "./summarizer.js";
export {
  SummarizerError,
  type SummarizerErrorCode,
  type SummarizerErrorOptions,
} from "./summarizer-error.js";
export { SUMMARIZER_PROMPT } from "./summarizer-prompt.js";
export type {
  JobError,
  JobOutcome,
  SummaryJob,
  SummaryJobContext,
  SummaryJobInfo,
  SummaryJobInput,
  SummaryJobRunner,
  SummaryJobState,
  SummaryReason,
} from "./summary-job.js";
export {
  createSummaryQueue,
  type SummaryQueue,
  type SummaryQueueOptions,
  type SummaryQueueStats,
} from "./summary-queue.js";
