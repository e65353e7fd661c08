import { type CodesOf, defineErrorCodes } from "@almanac/core";

/** Every code the compaction package throws. */
export const compactionErrorCodes = defineErrorCodes({
  /** An option of `createCompactor` is out of range (the message names it). */
  "compaction.config_invalid": { category: "user" },
  /** The journal (the summarizer queue) failed, so nothing was compacted. */
  "compaction.journal_failed": { category: "internal" },
  "compaction.nothing_to_summarize": { category: "internal" },
  /** The summary model's answer was not a usable summary (the fallback chain takes over). */
  "compaction.summary_invalid": { category: "provider" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof compactionErrorCodes> {}
}
