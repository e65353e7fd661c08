import { describeError, isAlmanacError, type Logger } from "@almanac/core";
import { ConsolidationError } from "./consolidation-error.js";
import type { ConsolidationOutcome, RunError, RunRecord } from "./consolidation-journal.js";
import { finishCommit, prepareRun, type RunSettings } from "./consolidation-run.js";
import type { RunBook } from "./run-book.js";

/** What one attempt needs. */
export interface RunExecutionDeps {
  readonly settings: RunSettings;
  /** The journaled runs, written durably on every change. */
  readonly book: RunBook;
  /** Bound to the consolidation component. */
  readonly logger: Logger;
  readonly maxAttempts: number;
  readonly maxConflictRetries: number;
  readonly backoff: (attempt: number) => number;
}

/** The retry rule: the error's own `isRetryable` flag (core's `ProviderError`, `ConsolidationError`). */
function isRetryable(error: unknown): boolean {
  return typeof error === "object" && error !== null && "isRetryable" in error && error.isRetryable === true;
}

function toRunError(error: unknown, retryable: boolean, at: number): RunError {
  return {
    code: isAlmanacError(error) ? error.code : "internal.unexpected",
    message: isAlmanacError(error) ? error.message : describeError(error),
    retryable,
    at,
  };
}

/**
 * One attempt of a run: marked running (the attempt counted), performed, then recorded as done, pending again
 * (a retryable failure, after a backoff; or stopped by `signal`, the attempt given back) or failed.
 */
export async function executeRun(deps: RunExecutionDeps, run: RunRecord, signal: AbortSignal): Promise<void> {
  const { book } = deps;
  const now = deps.settings.now;
  const attempt = run.attempts + 1;
  await book.update(run.id, {
    state: "running",
    attempts: attempt,
    startedAt: now(),
    updatedAt: now(),
    nextAttemptAt: undefined,
  });
  const logger = deps.logger.child({ runId: run.id, attempt });
  logger.info({ trigger: run.trigger }, "consolidation run started");
  try {
    const outcome = await performRun(deps, run.id, signal, logger);
    logger.info(
      { changes: outcome.changes.length, changedFiles: outcome.changedFiles, logs: outcome.logs.length },
      "consolidation run done",
    );
  } catch (error) {
    const at = now();
    if (signal.aborted) {
      // Not the run's fault: the attempt is given back; a journaled commit stays for the next start.
      await book.update(run.id, { state: "pending", attempts: attempt - 1, updatedAt: at });
      logger.info({}, "consolidation run stopped by shutdown; it stays journaled");
      return;
    }
    const retryable = isRetryable(error);
    const lastError = toRunError(error, retryable, at);
    if (retryable && attempt < deps.maxAttempts) {
      const delayMs = deps.backoff(attempt);
      await book.update(run.id, { state: "pending", lastError, nextAttemptAt: at + delayMs, updatedAt: at });
      logger.warn({ error: describeError(error), delayMs }, "consolidation run failed; will retry");
      return;
    }
    await book.update(run.id, {
      state: "failed",
      lastError,
      commit: undefined,
      finishedAt: at,
      updatedAt: at,
    });
    logger.error({ error: describeError(error) }, "consolidation run failed");
  }
}

/** Finishes a journaled commit, or prepares and commits, merging again while a person's edit gets in the way. */
async function performRun(
  deps: RunExecutionDeps,
  id: string,
  signal: AbortSignal,
  logger: Logger,
): Promise<ConsolidationOutcome> {
  const { book, settings } = deps;
  const journaled = book.run(id)?.commit;
  if (journaled !== undefined) {
    if ((await finishCommit(settings.store, journaled)) === "done") {
      logger.info({}, "finished a commit journaled before an interruption");
      await book.finish(id, journaled.watermark, journaled.outcome);
      return journaled.outcome;
    }
    logger.warn({}, "memory edited since the journaled commit; merging again");
    await book.update(id, { commit: undefined });
  }
  for (let round = 0; round <= deps.maxConflictRetries; round += 1) {
    const prepared = await prepareRun(settings, book.watermark(), signal);
    if (prepared.kind === "nothing") {
      await book.finish(id, prepared.watermark, prepared.outcome);
      return prepared.outcome;
    }
    await book.update(id, { commit: prepared.commit });
    if ((await finishCommit(settings.store, prepared.commit)) === "done") {
      await book.finish(id, prepared.commit.watermark, prepared.commit.outcome);
      return prepared.commit.outcome;
    }
    logger.info({ round: round + 1 }, "memory edited during the run; merging again on the new content");
    await book.update(id, { commit: undefined });
  }
  throw new ConsolidationError(
    "consolidation.conflict",
    `MEMORY.md kept changing while consolidation merged into it (${deps.maxConflictRetries + 1} tries); it will try again later.`,
    { isRetryable: true },
  );
}
