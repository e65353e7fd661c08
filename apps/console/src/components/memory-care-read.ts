// What the memory-care routes answer (forget, consolidation), read from untrusted JSON, and their state in words.
import { asArray, asRecord, num, str } from "../read.js";

/** One file a forget changed, with the lines it removed. */
export interface ForgetFile {
  readonly path: string;
  readonly removed: readonly string[];
}

/** What `POST /api/memory/forget` answers. */
export interface ForgetReport {
  readonly phrase: string;
  readonly files: readonly ForgetFile[];
  /** Until when the previous versions stay in the backups (ms since the epoch). */
  readonly backupsKeptUntil: number | undefined;
}

/** Reads the answer of `POST /api/memory/forget`. */
export function readForgetReport(body: unknown): ForgetReport {
  const record = asRecord(body);
  return {
    phrase: str(record.phrase),
    files: asArray(record.files)
      .map(asRecord)
      .map((file) => ({ path: str(file.path), removed: asArray(file.removed).map((line) => str(line)) }))
      .filter((file) => file.removed.length > 0),
    backupsKeptUntil: num(record.backupsKeptUntil),
  };
}

/** The removed lines of a forget, counted. */
export function removedCount(report: ForgetReport): number {
  return report.files.reduce((sum, file) => sum + file.removed.length, 0);
}

/** A phrase the owner asked to forget, as `GET /api/memory/forgotten` lists it. */
export interface ForgottenPhrase {
  readonly phrase: string;
  readonly at: number | undefined;
  /** `console`, `api`, or the session key of the conversation that asked. */
  readonly by: string;
  readonly purgeBackupsAt: number | undefined;
  readonly purgedAt: number | undefined;
}

/** Reads `GET /api/memory/forgotten`, newest first (the server lists them oldest first). */
export function readForgotten(body: unknown): ForgottenPhrase[] {
  return asArray(asRecord(body).forgotten)
    .map(asRecord)
    .map((entry) => ({
      phrase: str(entry.phrase),
      at: num(entry.at),
      by: str(entry.by),
      purgeBackupsAt: num(entry.purgeBackupsAt),
      purgedAt: num(entry.purgedAt),
    }))
    .reverse();
}

/**
 * Days the server keeps the previous versions of files a forget changed (`FORGET_BACKUP_DAYS` of the memory
 * package), for the question asked before a forget; the answer then gives the server's own date.
 */
export const FORGET_BACKUP_DAYS = 7;

/** A consolidation run as the page shows it. */
export interface ConsolidationRun {
  readonly id: string;
  /** `schedule` (the nightly run) or `request` (asked for). */
  readonly trigger: string;
  /** `pending`, `running`, `done` or `failed`. */
  readonly state: string;
  readonly attempts: number;
  readonly createdAt: number | undefined;
  readonly startedAt: number | undefined;
  readonly finishedAt: number | undefined;
  /** When a failed attempt is tried again. */
  readonly nextAttemptAt: number | undefined;
  readonly lastError: { readonly code: string; readonly message: string } | undefined;
  /** One sentence per change; empty when the run changed nothing (or has not finished). */
  readonly changes: readonly string[];
  readonly note: string;
  readonly changedFiles: readonly string[];
}

/** What `GET /api/memory/consolidation` answers. */
export interface ConsolidationStatus {
  /** False without a model: there is nothing to consolidate with. */
  readonly enabled: boolean;
  /** The nightly time (`HH:MM`), `null` when nightly runs are off. */
  readonly at: string | null;
  readonly timeZone: string;
  readonly nextRunAt: number | undefined;
  /** The id of the run in progress. */
  readonly running: string | null;
  /** Newest first. */
  readonly runs: readonly ConsolidationRun[];
}

function readRun(value: unknown): ConsolidationRun {
  const run = asRecord(value);
  const error = run.lastError === undefined ? undefined : asRecord(run.lastError);
  const outcome = asRecord(run.outcome);
  return {
    id: str(run.id),
    trigger: str(run.trigger),
    state: str(run.state, "unknown"),
    attempts: num(run.attempts) ?? 0,
    createdAt: num(run.createdAt),
    startedAt: num(run.startedAt),
    finishedAt: num(run.finishedAt),
    nextAttemptAt: num(run.nextAttemptAt),
    lastError: error && { code: str(error.code), message: str(error.message) },
    changes: asArray(outcome.changes).map((change) => str(change)),
    note: str(outcome.note),
    changedFiles: asArray(outcome.changedFiles).map((file) => str(file)),
  };
}

/** Reads `GET /api/memory/consolidation`. */
export function readConsolidation(body: unknown): ConsolidationStatus {
  const record = asRecord(body);
  const schedule = asRecord(record.schedule);
  const running = str(record.running);
  return {
    enabled: record.enabled === true,
    at: str(schedule.at) || null,
    timeZone: str(schedule.timeZone),
    nextRunAt: num(record.nextRunAt),
    running: running === "" ? null : running,
    runs: asArray(record.runs).map(readRun),
  };
}

/**
 * Where consolidation stands, one word: `off` (no model), `running` (a run works or is about to start),
 * `retrying` (an attempt failed; the next waits for its time), `failed` (the last finished run gave up),
 * `idle` (otherwise).
 */
export type ConsolidationPhase = "off" | "running" | "retrying" | "failed" | "idle";

/** The phase of `status` at `now` (see {@link ConsolidationPhase}). */
export function consolidationPhase(status: ConsolidationStatus, now: number): ConsolidationPhase {
  if (!status.enabled) return "off";
  const pending = status.runs.filter((run) => run.state === "pending");
  if (status.running !== null || status.runs.some((run) => run.state === "running")) return "running";
  if (pending.some((run) => (run.nextAttemptAt ?? 0) <= now)) return "running";
  if (pending.length > 0) return "retrying";
  return lastFinished(status)?.state === "failed" ? "failed" : "idle";
}

/** The newest run that finished (done or failed). */
export function lastFinished(status: ConsolidationStatus): ConsolidationRun | undefined {
  return status.runs.find((run) => run.state === "done" || run.state === "failed");
}

/** The newest run not finished yet (running, or waiting to start or to retry). */
export function unfinished(status: ConsolidationStatus): ConsolidationRun | undefined {
  return status.runs.find((run) => run.state === "running" || run.state === "pending");
}

/** What a finished run did, in a sentence: `2 changes`, `no change`, or why it failed. */
export function runSummary(run: ConsolidationRun): string {
  if (run.state === "failed") return `failed: ${run.lastError?.message || "no reason given"}`;
  const count = run.changes.length;
  return count === 0 ? "no change" : `${count} change${count === 1 ? "" : "s"}`;
}

/** Who started a run, in words. */
export function triggerWords(trigger: string): string {
  return trigger === "schedule" ? "nightly" : trigger === "request" ? "asked for" : trigger;
}
