import { type CompactionReason, compactionReasons } from "@almanac/compaction";
import { type Message, messageSchema } from "@almanac/core";
import { z } from "zod";

/** Why messages were handed to the summarizer: a compaction (its reason) or `/new` ending the session. */
export type SummaryReason = CompactionReason | "new-session";

/**
 * What a caller enqueues: the messages leaving a session's prompt, with the session key. A compaction's
 * `CompactedBatch` is one as it is (`{ sessionKey, ...batch }`); `/new` hands over what the session held.
 */
export interface SummaryJobInput {
  readonly sessionKey: string;
  readonly reason: SummaryReason;
  readonly messages: readonly Message[];
  /** The rolling summary the compaction wrote, as orientation for the summarizer. */
  readonly summary?: string;
  /** When the batch was made (milliseconds since the epoch). */
  readonly createdAt: number;
}

/** A journaled job as the runner receives it. */
export interface SummaryJob extends SummaryJobInput {
  readonly id: string;
  /** Enqueue sequence number: jobs run in this order. */
  readonly seq: number;
  readonly enqueuedAt: number;
}

/** What a job's run gets besides the job. */
export interface SummaryJobContext {
  /** Fires when the queue stops past its deadline; the job stays journaled and runs again on start. */
  readonly signal: AbortSignal;
  /** 1 for the first run; an interrupted or failed run counts. */
  readonly attempt: number;
  /** What an earlier run of this job saved with `saveCheckpoint` (undefined at first). Untrusted: validate it. */
  readonly checkpoint: unknown;
  /** Saves progress (JSON) into the job's journal file, durably, before resolving. */
  saveCheckpoint(checkpoint: unknown): Promise<void>;
}

/** Runs one job; throws to fail it (retried when the error says `isRetryable: true`). */
export type SummaryJobRunner = (job: SummaryJob, context: SummaryJobContext) => Promise<JobOutcome>;

/** Where a job is in its life. `parked`: failed for good until someone calls `retry`. */
export type SummaryJobState = "pending" | "running" | "parked" | "done";

/** What a finished run reports (kept in the job's history). */
export interface JobOutcome {
  /** One plain sentence, e.g. the agent's final answer. */
  readonly note: string;
  /** Memory files the job changed, workspace-relative. */
  readonly changedFiles: readonly string[];
}

/** The last failure of a job. */
export interface JobError {
  readonly code: string;
  readonly message: string;
  readonly retryable: boolean;
  readonly at: number;
}

/** A job as `list()` shows it (without its messages). */
export interface SummaryJobInfo {
  readonly id: string;
  readonly seq: number;
  readonly sessionKey: string;
  readonly reason: SummaryReason;
  readonly state: SummaryJobState;
  /** Runs started so far (an interrupted run counts). */
  readonly attempts: number;
  readonly messageCount: number;
  readonly createdAt: number;
  readonly enqueuedAt: number;
  readonly updatedAt: number;
  readonly lastError?: JobError;
  /** When a failed job will be tried again. */
  readonly nextAttemptAt?: number;
  readonly finishedAt?: number;
  readonly outcome?: JobOutcome;
}

const reasonSchema = z.enum([...compactionReasons, "new-session"]);

const jobErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
  at: z.number(),
});

const outcomeSchema = z.object({ note: z.string(), changedFiles: z.array(z.string()).readonly() });

/** Schema of one job's journal file (untrusted on read: it may be damaged or edited). */
export const journalRecordSchema = z.object({
  version: z.literal(1),
  id: z.string().regex(/^\d{12}-[0-9a-f]{8}$/),
  seq: z.number().int().positive(),
  sessionKey: z.string().min(1),
  reason: reasonSchema,
  state: z.enum(["pending", "running", "parked", "done"]),
  attempts: z.number().int().min(0),
  messageCount: z.number().int().min(0),
  createdAt: z.number(),
  enqueuedAt: z.number(),
  updatedAt: z.number(),
  /** Absent once the job is done (history keeps only the outcome). */
  messages: z.array(messageSchema).optional(),
  summary: z.string().optional(),
  lastError: jobErrorSchema.optional(),
  nextAttemptAt: z.number().optional(),
  finishedAt: z.number().optional(),
  outcome: outcomeSchema.optional(),
  /** Progress the runner saved (e.g. a commit record); validated by the runner. */
  checkpoint: z.unknown().optional(),
});

/** One job's journal file. */
export type JournalRecord = z.infer<typeof journalRecordSchema>;

/** The public view of a journal record. */
export function toJobInfo(record: JournalRecord): SummaryJobInfo {
  return {
    id: record.id,
    seq: record.seq,
    sessionKey: record.sessionKey,
    reason: record.reason,
    state: record.state,
    attempts: record.attempts,
    messageCount: record.messageCount,
    createdAt: record.createdAt,
    enqueuedAt: record.enqueuedAt,
    updatedAt: record.updatedAt,
    ...(record.lastError === undefined ? {} : { lastError: record.lastError }),
    ...(record.nextAttemptAt === undefined ? {} : { nextAttemptAt: record.nextAttemptAt }),
    ...(record.finishedAt === undefined ? {} : { finishedAt: record.finishedAt }),
    ...(record.outcome === undefined ? {} : { outcome: record.outcome }),
  };
}
