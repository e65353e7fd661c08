// Consolidation of long-term memory: a durable job that folds the daily logs into MEMORY.md, exactly once.
export {
  ConsolidationError,
  type ConsolidationErrorCode,
  type ConsolidationErrorOptions,
  consolidationErrorCodes,
} from "./consolidation-error.js";
export type { ConsolidationOutcome, RunError, RunRecord } from "./consolidation-journal.js";
export { CONSOLIDATION_PROMPT } from "./consolidation-prompt.js";
export { type ConsolidationStatus, Consolidator, type ConsolidatorOptions } from "./consolidator.js";
export type { ConsolidationRunInfo } from "./run-book.js";
export { TOPIC_DIRECTORY } from "./staged-memory.js";
