import { randomBytes } from "node:crypto";
import { describeError, type Logger } from "@almanac/core";
import { mentionsAny } from "@almanac/memory-files";
import {
  ConsolidationJournal,
  type ConsolidationOutcome,
  type ConsolidationState,
  INITIAL_STATE,
  type RunError,
  type RunRecord,
} from "./consolidation-journal.js";
import type { Watermark } from "./pending-logs.js";

/** A run as the API shows it (without its commit record). */
export type ConsolidationRunInfo = Omit<RunRecord, "commit">;

/** Options of {@link RunBook}. */
export interface RunBookOptions {
  readonly stateDir: string;
  /** Bound to the consolidation component. */
  readonly logger: Logger;
  readonly now: () => number;
  /** Normalized phrases the owner asked to forget: kept out of the history. */
  readonly forgotten: () => readonly string[];
  /** Finished runs kept in the history. */
  readonly keepRuns: number;
  /** Told after a run wrote memory files, before it is marked done. Failures are logged, not fatal. */
  readonly onCommitted?: (changedFiles: readonly string[]) => Promise<void>;
}

/** Why a run's note is not shown. */
const WITHHELD = "(withheld: it mentions something you asked to forget)";

/** An outcome without what the owner asked to forget (notes are the agent's own words, so they may mention it). */
function scrubOutcome(outcome: ConsolidationOutcome, forgotten: readonly string[]): ConsolidationOutcome {
  if (forgotten.length === 0) return outcome;
  return {
    ...outcome,
    note: mentionsAny(outcome.note, forgotten) ? WITHHELD : outcome.note,
    changes: outcome.changes.filter((change) => !mentionsAny(change, forgotten)),
  };
}

function scrubRun(run: RunRecord, forgotten: readonly string[]): RunRecord {
  return run.outcome === undefined ? run : { ...run, outcome: scrubOutcome(run.outcome, forgotten) };
}

/** The run without its commit record. */
export function toRunInfo(run: RunRecord): ConsolidationRunInfo {
  const { commit: _commit, ...info } = run;
  return info;
}

/**
 * The runs and the watermark as journaled: every change is written durably (one file, replaced atomically) before
 * the caller acts on it; the history keeps the recent finished runs, scrubbed of what the owner asked to forget.
 */
export class RunBook {
  readonly #options: RunBookOptions;
  readonly #journal: ConsolidationJournal;
  #state: ConsolidationState = INITIAL_STATE;
  #loading: Promise<void> | undefined;
  #saving: Promise<void> = Promise.resolve();

  constructor(options: RunBookOptions) {
    this.#options = options;
    this.#journal = new ConsolidationJournal(options.stateDir, options.logger, options.now);
  }

  /** Reads the journal once (later calls wait for the same read). */
  load(): Promise<void> {
    this.#loading ??= this.#journal.load().then((state) => {
      this.#state = state;
    });
    return this.#loading;
  }

  run(id: string): RunRecord | undefined {
    return this.#state.runs.find((run) => run.id === id);
  }

  runs(): readonly RunRecord[] {
    return this.#state.runs;
  }

  /** Pending runs, oldest first. */
  pending(): RunRecord[] {
    return this.#state.runs
      .filter((run) => run.state === "pending")
      .sort((left, right) => left.seq - right.seq);
  }

  watermark(): Watermark {
    return this.#state.watermark;
  }

  lastSlot(): number | null {
    return this.#state.lastSlot;
  }

  /** The history for people, newest first. */
  history(): ConsolidationRunInfo[] {
    const forgotten = this.#options.forgotten();
    return [...this.#state.runs]
      .sort((left, right) => right.seq - left.seq)
      .map((run) => toRunInfo(scrubRun(run, forgotten)));
  }

  /** Journals a new pending run. */
  async add(trigger: RunRecord["trigger"]): Promise<RunRecord> {
    const now = this.#options.now();
    const seq = this.#state.nextSeq;
    const run: RunRecord = {
      id: `${String(seq).padStart(6, "0")}-${randomBytes(4).toString("hex")}`,
      seq,
      trigger,
      state: "pending",
      attempts: 0,
      createdAt: now,
      updatedAt: now,
    };
    await this.#replace({ ...this.#state, nextSeq: seq + 1, runs: [...this.#state.runs, run] });
    return run;
  }

  async update(id: string, patch: Partial<RunRecord>): Promise<void> {
    await this.#replace({
      ...this.#state,
      runs: this.#state.runs.map((run) => (run.id === id ? { ...run, ...patch } : run)),
    });
  }

  async setLastSlot(slot: number | null): Promise<void> {
    await this.#replace({ ...this.#state, lastSlot: slot });
  }

  /**
   * After a crash: a run that was running goes back to pending (a journaled commit is always finished, as that
   * needs no model call), or fails when it has no attempt left.
   */
  async recoverInterrupted(maxAttempts: number): Promise<void> {
    const now = this.#options.now();
    const interrupted: RunError = {
      code: "consolidation.interrupted",
      message: "The server stopped while this run was in progress.",
      retryable: true,
      at: now,
    };
    const runs = this.#state.runs.map((run): RunRecord => {
      if (run.state !== "running") return run;
      this.#options.logger.warn(
        { runId: run.id, committing: run.commit !== undefined },
        "consolidation run interrupted",
      );
      return run.commit === undefined && run.attempts >= maxAttempts
        ? { ...run, state: "failed", lastError: interrupted, finishedAt: now, updatedAt: now }
        : { ...run, state: "pending", lastError: interrupted, updatedAt: now };
    });
    await this.#replace({ ...this.#state, runs });
  }

  /**
   * Marks the run done and advances the watermark, in one write, once `onCommitted` was told (so a client that
   * sees the run done finds its changes in search). The oldest finished runs beyond the history are dropped.
   */
  async finish(id: string, watermark: Watermark, outcome: ConsolidationOutcome): Promise<void> {
    const { onCommitted, keepRuns, logger } = this.#options;
    if (outcome.changedFiles.length > 0 && onCommitted !== undefined) {
      await onCommitted(outcome.changedFiles).catch((error: unknown) =>
        logger.warn({ error: describeError(error) }, "could not report the consolidated files"),
      );
    }
    const now = this.#options.now();
    const runs = this.#state.runs.map(
      (run): RunRecord =>
        run.id === id
          ? { ...run, state: "done", outcome, commit: undefined, finishedAt: now, updatedAt: now }
          : run,
    );
    const finished = runs.filter((run) => run.state === "done" || run.state === "failed");
    const dropped = new Set(finished.slice(0, Math.max(0, finished.length - keepRuns)).map((run) => run.id));
    await this.#replace({ ...this.#state, watermark, runs: runs.filter((run) => !dropped.has(run.id)) });
  }

  /** Changes a run in memory only, when the journal cannot be written: the next write that works includes it. */
  keepUnwritten(id: string, patch: Partial<RunRecord>): void {
    this.#state = {
      ...this.#state,
      runs: this.#state.runs.map((run) => (run.id === id ? { ...run, ...patch } : run)),
    };
  }

  /** Resolves once the writes in flight are done. */
  async flush(): Promise<void> {
    await this.#saving.catch(() => {});
  }

  /** Replaces the state and writes it (after any write in flight, so the file always ends with the latest). */
  async #replace(next: ConsolidationState): Promise<void> {
    const forgotten = this.#options.forgotten();
    this.#state = { ...next, runs: next.runs.map((run) => scrubRun(run, forgotten)) };
    const write = this.#saving.catch(() => {}).then(() => this.#journal.save(this.#state));
    this.#saving = write;
    await write;
  }
}
