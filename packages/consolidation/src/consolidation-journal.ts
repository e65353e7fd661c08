import { mkdir, readFile, rename } from "node:fs/promises";
import * as path from "node:path";
import { describeError, isErrnoCode, type Logger } from "@almanac/core";
import {
  fsyncDirectory,
  makeDirectoryIn,
  PRIVATE_DIRECTORY_MODE,
  writeFileDurably,
} from "@almanac/durable-write";
import { z } from "zod";
import { EMPTY_WATERMARK, watermarkSchema } from "./pending-logs.js";

const outcomeSchema = z.object({
  /** The agent's closing sentence(s), or why nothing ran. */
  note: z.string(),
  /** One sentence per change (what the day's log records). */
  changes: z.array(z.string()),
  /** Memory files written, workspace-relative. */
  changedFiles: z.array(z.string()),
  /** Daily logs folded in. */
  logs: z.array(z.string()),
});

/** What a finished run reports. */
export type ConsolidationOutcome = z.infer<typeof outcomeSchema>;

/**
 * The commit record: journaled before any file changes, so a crash after it finishes the commit exactly once.
 * Each file is written only while it still has `baseHash` (skipped when it already has `hash`).
 */
const commitSchema = z.object({
  status: z.literal("committing"),
  files: z.array(
    z.object({ path: z.string(), baseHash: z.string().nullable(), content: z.string(), hash: z.string() }),
  ),
  /** The entry for the day's log, appended once (skipped when the log already holds it). */
  logEntry: z.object({ path: z.string(), date: z.string(), text: z.string() }).optional(),
  /** The watermark once this run's logs are folded in. */
  watermark: watermarkSchema,
  outcome: outcomeSchema,
});

/** A journaled commit. */
export type CommitRecord = z.infer<typeof commitSchema>;

const errorSchema = z.object({
  code: z.string(),
  message: z.string(),
  retryable: z.boolean(),
  at: z.number(),
});

/** A run's last failure. */
export type RunError = z.infer<typeof errorSchema>;

const runSchema = z.object({
  id: z.string().regex(/^\d{6,}-[0-9a-f]{8}$/),
  seq: z.number().int().positive(),
  /** `schedule`: the nightly run; `request`: asked for through the API. */
  trigger: z.enum(["schedule", "request"]),
  /** `failed`: gave up (no retry left, or a failure retrying cannot fix); the next run starts afresh. */
  state: z.enum(["pending", "running", "done", "failed"]),
  /** Runs started so far (an interrupted one counts). */
  attempts: z.number().int().min(0),
  createdAt: z.number(),
  updatedAt: z.number(),
  startedAt: z.number().optional(),
  finishedAt: z.number().optional(),
  /** When a failed attempt is tried again. */
  nextAttemptAt: z.number().optional(),
  lastError: errorSchema.optional(),
  outcome: outcomeSchema.optional(),
  commit: commitSchema.optional(),
});

/** One run as journaled. */
export type RunRecord = z.infer<typeof runSchema>;

const stateSchema = z.object({
  version: z.literal(1),
  nextSeq: z.number().int().positive(),
  /** The last nightly slot a run was asked for (ms since the epoch), so a missed night runs once at start. */
  lastSlot: z.number().nullable(),
  watermark: watermarkSchema,
  /** Pending, running and the recent finished runs, by sequence. */
  runs: z.array(runSchema),
});

/** Everything consolidation keeps on disk, in one file. */
export type ConsolidationState = z.infer<typeof stateSchema>;

/** The state of a workspace never consolidated. */
export const INITIAL_STATE: ConsolidationState = {
  version: 1,
  nextSeq: 1,
  lastSlot: null,
  watermark: EMPTY_WATERMARK,
  runs: [],
};

/**
 * The journal: `<stateDir>/consolidation/state.json`, replaced atomically and durably on every change. A file that
 * cannot be read is moved to `consolidation/damaged/` and logged; consolidation then starts over (the next run reads
 * the recent logs again, which the agent merges without duplicating).
 */
export class ConsolidationJournal {
  readonly #directory: string;
  readonly #file: string;
  readonly #logger: Logger;
  readonly #clock: () => number;

  constructor(stateDir: string, logger: Logger, clock: () => number) {
    this.#directory = path.join(stateDir, "consolidation");
    this.#file = path.join(this.#directory, "state.json");
    this.#logger = logger;
    this.#clock = clock;
  }

  async load(): Promise<ConsolidationState> {
    if (await makeDirectoryIn(this.#directory)) await fsyncDirectory(path.dirname(this.#directory));
    let text: string;
    try {
      text = await readFile(this.#file, "utf8");
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) return INITIAL_STATE;
      throw error;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      return this.#setAside(`not valid JSON (${describeError(error)})`);
    }
    const parsed = stateSchema.safeParse(json);
    if (!parsed.success) return this.#setAside(parsed.error.message);
    return parsed.data;
  }

  async save(state: ConsolidationState): Promise<void> {
    await writeFileDurably(this.#file, `${JSON.stringify(state)}\n`);
  }

  async #setAside(why: string): Promise<ConsolidationState> {
    const damaged = path.join(this.#directory, "damaged");
    await mkdir(damaged, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    const target = path.join(damaged, `state.${this.#clock()}.json`);
    await rename(this.#file, target);
    this.#logger.error(
      { movedTo: target, why },
      "consolidation journal damaged; moved aside, starting over (recent logs are read again)",
    );
    return INITIAL_STATE;
  }
}
