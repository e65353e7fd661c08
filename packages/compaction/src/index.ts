export type { CheapPassName, PassStats } from "./cheap-passes.js";
export {
  type CompactedBatch,
  type CompactionJournal,
  type CompactionReason,
  compactionReasons,
  type OriginalsLookup,
} from "./commit-compaction.js";
export {
  type CompactionEndEvent,
  type CompactionEvent,
  type CompactionOutcome,
  type CompactionResult,
  type CompactionStartEvent,
  formatCompactionNotice,
} from "./compaction-events.js";
export {
  type CheckInput,
  type CompactInput,
  type CompactionState,
  type Compactor,
  type ContextCheck,
  compactionCounters,
  compactionStateOf,
  createCompactor,
} from "./compactor.js";
export type { CheapPassOptions, CompactorOptions, KeepRecentOptions } from "./compactor-options.js";
export { toolOutputTokenBudget } from "./compactor-options.js";
export {
  type ContextMeter,
  createContextMeter,
  type PromptInput,
  type PromptMeasure,
  type RatioBounds,
} from "./context-check.js";
export * from "./error-codes.js";
export {
  contextLengthErrorCode,
  isContextLengthError,
  runWithOverflowRecovery,
} from "./overflow-recovery.js";
export type { SummaryPath } from "./summarize.js";
export { summaryInstructionsTitle, summarySections, turnPrefixSection } from "./summary-prompt.js";
export {
  defaultThresholdCeiling,
  defaultThresholdTiers,
  fixedPromptBudget,
  type ResolvedThreshold,
  resolveThreshold,
  type ThresholdOptions,
  type ThresholdTier,
} from "./thresholds.js";
export {
  defaultToolSummaries,
  genericToolSummary,
  type ToolOutputFacts,
  type ToolSummarizer,
  type ToolSummaryRegistry,
} from "./tool-summaries.js";
