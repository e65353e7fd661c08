import { describeError, isAlmanacError, type Logger } from "@almanac/core";
import { storageErrnoOf } from "./storage-errno.js";
import type {
  JobError,
  JournalRecord,
  SummaryJob,
  SummaryJobContext,
  SummaryJobRunner,
} from "./summary-job.js";
import type { SummaryJournal } from "./summary-journal.js";

/** What one run of a job needs from its queue. */
export interface JobExecutionDeps {
  readonly journal: SummaryJournal;
  readonly run: SummaryJobRunner;
  /** Writes a record durably and updates the queue's view of the job. */
  readonly persist: (record: JournalRecord) => Promise<void>;
  readonly clock: () => number;
  readonly logger: Logger;
  readonly maxAttempts: number;
  readonly backoff: (attempt: number) => number;
  readonly isRetryable: (error: unknown) => boolean;
}

/** How a run ended, for the queue to act on. */
export type JobExecutionResult =
  | { readonly kind: "done" }
  /** Aborted by the queue's shutdown: back to pending, the attempt given back. */
  | { readonly kind: "stopped" }
  /** Failed, will run again after `delayMs`. */
  | { readonly kind: "retry"; readonly delayMs: number }
  | { readonly kind: "parked" }
  /** The disk is full or read-only: back to pending, the attempt given back; run again once writes work. */
  | { readonly kind: "storage-full" };

/** The default retry rule: the error's own `isRetryable` flag (core's `ProviderError`, `SummarizerError`). */
export function defaultIsRetryable(error: unknown): boolean {
  return typeof error === "object" && error !== null && "isRetryable" in error && error.isRetryable === true;
}

function retryAfterOf(error: unknown): number {
  if (typeof error === "object" && error !== null && "retryAfterMs" in error) {
    const value = error.retryAfterMs;
    if (typeof value === "number" && Number.isFinite(value) && value > 0) return value;
  }
  return 0;
}

/** A failure as the job history keeps it. */
export function toJobError(error: unknown, retryable: boolean, at: number): JobError {
  return {
    code: isAlmanacError(error) ? error.code : "internal.unexpected",
    message: isAlmanacError(error) ? error.message : describeError(error),
    retryable,
    at,
  };
}

function jobOf(record: JournalRecord): SummaryJob {
  return {
    id: record.id,
    seq: record.seq,
    sessionKey: record.sessionKey,
    reason: record.reason,
    messages: record.messages ?? [],
    ...(record.summary === undefined ? {} : { summary: record.summary }),
    createdAt: record.createdAt,
    enqueuedAt: record.enqueuedAt,
  };
}

/**
 * Runs one journaled job once: marks it running (counting the attempt), runs it with a context whose
 * checkpoints go into its journal file, then records the result: done (messages dropped, outcome
 * kept), pending again (retryable failure, or stopped by `signal`), or parked with its error.
 */
export async function executeSummaryJob(
  deps: JobExecutionDeps,
  record: JournalRecord,
  signal: AbortSignal,
): Promise<JobExecutionResult> {
  const { clock, persist } = deps;
  const attempt = record.attempts + 1;
  let latest: JournalRecord = {
    ...record,
    state: "running",
    attempts: attempt,
    updatedAt: clock(),
    nextAttemptAt: undefined,
  };
  await persist(latest);
  const job = jobOf(latest);
  const context: SummaryJobContext = {
    signal,
    attempt,
    checkpoint: latest.checkpoint,
    saveCheckpoint: async (checkpoint) => {
      latest = { ...latest, checkpoint, updatedAt: clock() };
      await deps.journal.write(latest);
    },
  };
  const logger = deps.logger.child({ jobId: job.id, sessionKey: job.sessionKey, attempt });
  logger.info({ messages: job.messages.length }, "summary job started");
  try {
    const outcome = await deps.run(job, context);
    const { messages: _messages, checkpoint: _checkpoint, summary: _summary, ...kept } = latest;
    await persist({ ...kept, state: "done", outcome, finishedAt: clock(), updatedAt: clock() });
    logger.info({ changedFiles: outcome.changedFiles }, "summary job done");
    return { kind: "done" };
  } catch (error) {
    if (signal.aborted) {
      // Not the job's fault: give the attempt back; the checkpoint (if any) stays for the next start.
      await persist({ ...latest, state: "pending", attempts: attempt - 1, updatedAt: clock() });
      logger.info({}, "summary job stopped by shutdown; it stays journaled");
      return { kind: "stopped" };
    }
    if (storageErrnoOf(error) !== undefined) {
      // Not the job's fault either: a full disk must never park it. (If this write fails too, the queue
      // puts the job back to pending itself.)
      const lastError = toJobError(error, true, clock());
      await persist({ ...latest, state: "pending", attempts: attempt - 1, lastError, updatedAt: clock() });
      logger.warn(
        { error: describeError(error) },
        "summary job stopped by a full disk; it runs again once writes work",
      );
      return { kind: "storage-full" };
    }
    const lastError = toJobError(error, deps.isRetryable(error), clock());
    if (lastError.retryable && attempt < deps.maxAttempts) {
      const delayMs = Math.max(deps.backoff(attempt), retryAfterOf(error));
      await persist({
        ...latest,
        state: "pending",
        lastError,
        nextAttemptAt: clock() + delayMs,
        updatedAt: clock(),
      });
      logger.warn({ error: describeError(error), delayMs }, "summary job failed; will retry");
      return { kind: "retry", delayMs };
    }
    await persist({ ...latest, state: "parked", lastError, updatedAt: clock() });
    logger.error({ error: describeError(error) }, "summary job parked; retry it from the admin API");
    return { kind: "parked" };
  }
}
