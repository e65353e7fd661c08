// The summarizer: a durable queue of compacted batches and the agent that merges them into the daily logs.
export { probeWritable, type StorageErrno, storageErrnoOf } from "./storage-errno.js";
export { createSummarizer, type SummarizerOptions } from "./summarizer.js";
export {
  SummarizerError,
  type SummarizerErrorCode,
  type SummarizerErrorOptions,
  summarizerErrorCodes,
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
