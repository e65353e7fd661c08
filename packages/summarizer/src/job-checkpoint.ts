import { isAlmanacError } from "@almanac/core";
import type { MemoryFileStore } from "@almanac/memory-files";
import { z } from "zod";
import { SummarizerError } from "./summarizer-error.js";
import type { SummaryJobContext } from "./summary-job.js";

const dayProgressSchema = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("committing"),
    path: z.string(),
    baseHash: z.string().nullable(),
    content: z.string(),
    hash: z.string(),
  }),
  z.object({ status: z.literal("done"), path: z.string(), changed: z.boolean(), note: z.string() }),
]);

/** Where the summarizer stands with one day of a job: a journaled commit, or done. */
type DayProgress = z.infer<typeof dayProgressSchema>;
/** A day merged (and committed, when it changed); its note goes into the job's outcome. */
export type DoneDay = Extract<DayProgress, { status: "done" }>;
/** A merged log about to be written over the version it was merged on (`baseHash`, null: no file yet). */
export type CommitRecord = Extract<DayProgress, { status: "committing" }>;

const checkpointSchema = z.object({ version: z.literal(1), days: z.record(z.string(), dayProgressSchema) });

type Checkpoint = z.infer<typeof checkpointSchema>;

function parseCheckpoint(value: unknown): Checkpoint {
  if (value === undefined) return { version: 1, days: {} };
  const parsed = checkpointSchema.safeParse(value);
  if (!parsed.success) {
    throw new SummarizerError(
      "summarizer.checkpoint_invalid",
      "The job's saved progress is damaged; it is not rerun blindly (that could write its facts twice).",
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/**
 * A job's progress per local day, saved through the queue's checkpoint after every change, so a run after a
 * crash skips the days done and finishes a journaled commit instead of merging its day twice.
 */
export class JobCheckpoint {
  #checkpoint: Checkpoint;
  readonly #context: SummaryJobContext;

  /** Reads what an earlier run saved; throws `summarizer.checkpoint_invalid` when it is damaged. */
  constructor(context: SummaryJobContext) {
    this.#checkpoint = parseCheckpoint(context.checkpoint);
    this.#context = context;
  }

  /** What an earlier step or run saved for `date`. */
  day(date: string): DayProgress | undefined {
    return this.#checkpoint.days[date];
  }

  /** Records `progress` for `date` (undefined: forget the day's progress) and saves the checkpoint. */
  async saveDay(date: string, progress: DayProgress | undefined): Promise<void> {
    const days = { ...this.#checkpoint.days };
    if (progress === undefined) delete days[date];
    else days[date] = progress;
    this.#checkpoint = { version: 1, days };
    await this.#context.saveCheckpoint(this.#checkpoint);
  }
}

/** Finishes a journaled commit: applies it unless already applied; `undefined` when a person changed the file since. */
export async function finishCommit(
  store: MemoryFileStore,
  commit: CommitRecord,
): Promise<DoneDay | undefined> {
  const current = await store.tryRead(commit.path);
  const currentHash = current?.hash ?? null;
  if (currentHash === commit.hash)
    return { status: "done", path: commit.path, changed: true, note: "committed" };
  if (currentHash !== commit.baseHash) return undefined;
  try {
    await store.write(commit.path, commit.content, { expectedHash: commit.baseHash });
  } catch (error) {
    if (isAlmanacError(error) && error.code === "memory.conflict") return undefined;
    throw error;
  }
  return { status: "done", path: commit.path, changed: true, note: "committed" };
}
