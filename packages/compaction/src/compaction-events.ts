import type { PassStats } from "./cheap-passes.js";
import type { CompactionReason } from "./commit-compaction.js";
import type { SummaryPath } from "./summarize.js";

/**
 * What a compaction did. `summarized`: messages were folded into the rolling summary and left the prompt;
 * `compressed`: the cheap passes alone brought the prompt under the threshold (no model call);
 * `unchanged`: nothing could be shortened or summarized.
 */
export type CompactionOutcome = "summarized" | "compressed" | "unchanged";

/** The result of one compaction (also the payload of its `compaction-end` event). */
export interface CompactionResult {
  readonly reason: CompactionReason;
  readonly outcome: CompactionOutcome;
  /** Prompt tokens before and after, corrected by the provider ratio. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly threshold: number;
  /** Every cheap pass, in the order run, with the tokens it removed. */
  readonly passes: readonly PassStats[];
  /** Who wrote the summary; `none` when no summary was written. */
  readonly summarizer: SummaryPath | "none";
  /** Model requests made for the summary (failed ones included). */
  readonly llmCalls: number;
  /** Messages that got the `compacted` mark. */
  readonly compactedMessages: number;
  /** Of those, how many were in the turn prefix (the early part of the current turn). */
  readonly turnPrefixMessages: number;
  /** Old compacted messages dropped from memory by the retention limit. */
  readonly droppedMessages: number;
  /** Strikes after this compaction (see anti-thrash in docs/compaction.md). */
  readonly strikes: number;
  readonly durationMs: number;
  /** One line for the user, when `notifyUser` is on and the compaction summarized. */
  readonly notice?: string;
}

/** Sent when a compaction starts. */
export interface CompactionStartEvent {
  readonly type: "compaction-start";
  readonly reason: CompactionReason;
  readonly tokensBefore: number;
  readonly threshold: number;
  /** Milliseconds since the epoch (the compactor's clock). */
  readonly at: number;
}

/** Sent when a compaction ends: its result, or `failed` with the error (nothing was committed then). */
export type CompactionEndEvent =
  | ({ readonly type: "compaction-end" } & CompactionResult)
  | {
      readonly type: "compaction-end";
      readonly reason: CompactionReason;
      readonly outcome: "failed";
      readonly tokensBefore: number;
      readonly threshold: number;
      readonly durationMs: number;
      readonly error: string;
    };

/** Events of the compactor, for logs, metrics and the server's user notices. */
export type CompactionEvent = CompactionStartEvent | CompactionEndEvent;

const numberFormat = new Intl.NumberFormat("en-US");

/** The user notice, e.g. "Context compacted: 14,210 → 3,905 tokens." */
export function formatCompactionNotice(tokensBefore: number, tokensAfter: number): string {
  return `Context compacted: ${numberFormat.format(tokensBefore)} → ${numberFormat.format(tokensAfter)} tokens.`;
}
