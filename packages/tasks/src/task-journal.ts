import { mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { describeError, isErrnoCode, type Logger } from "@almanac/core";
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE, writeFileDurably } from "@almanac/durable-write";
import { z } from "zod";
import { scheduleSchema } from "./schedule.js";
import type { FiringRecord, TaskRecord } from "./task-types.js";

const taskSchema = z.object({
  id: z.string(),
  sessionKey: z.string(),
  title: z.string(),
  instruction: z.string(),
  schedule: scheduleSchema,
  timeZone: z.string(),
  state: z.enum(["active", "paused", "done", "cancelled"]),
  kind: z.enum(["task", "heartbeat"]),
  createdAt: z.number(),
  createdBy: z.string(),
  nextFireAt: z.number().optional(),
  lastFiredAt: z.number().optional(),
});

const firingSchema = z.object({
  id: z.string(),
  taskId: z.string(),
  sessionKey: z.string(),
  dueAt: z.number(),
  claimedAt: z.number(),
  state: z.enum([
    "claimed",
    "answered",
    "delivering",
    "delivered",
    "silent",
    "failed",
    "missed",
    "uncertain",
  ]),
  late: z.boolean(),
  missed: z.boolean().optional(),
  attempts: z.number(),
  reply: z.string().optional(),
  lastError: z.string().optional(),
  finishedAt: z.number().optional(),
  retryAt: z.number().optional(),
  deliveringAt: z.number().optional(),
});

const lineSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("task"), task: taskSchema }),
  z.object({ type: z.literal("firing"), firing: firingSchema }),
  z.object({ type: z.literal("task-deleted"), id: z.string() }),
]);

/** One change, as the journal records it. */
export type JournalLine = z.infer<typeof lineSchema>;

/** What the journal holds: the tasks and the firings, each as last written. */
export interface JournalState {
  readonly tasks: Map<string, TaskRecord>;
  readonly firings: Map<string, FiringRecord>;
}

/** Finished firings kept (the history `GET /api/tasks/{id}` shows); unfinished ones are always kept. */
const KEPT_FIRINGS = 2_000;

const FINAL_STATES: ReadonlySet<FiringRecord["state"]> = new Set([
  "delivered",
  "silent",
  "failed",
  "missed",
  "uncertain",
]);

/** True when a firing will not change again. */
export function isFinished(firing: FiringRecord): boolean {
  return FINAL_STATES.has(firing.state);
}

/**
 * The tasks' durable journal: one JSON object per line, appended and fsynced, each line a whole task or firing
 * as it now stands (the last line of an id wins). Appends made while one is being written are written together
 * with one fsync (group commit), so a thousand firings due in the same minute cost a few disk waits, not a
 * thousand, and nothing blocks the event loop. Opening reads it back (a line cut by a crash is ignored: its
 * write never resolved) and rewrites it compacted, atomically.
 */
export class TaskJournal {
  readonly #file: string;
  readonly #logger: Logger;
  #queue: Array<{
    readonly line: string;
    readonly resolve: () => void;
    readonly reject: (error: unknown) => void;
  }> = [];
  #writing: Promise<void> | undefined;

  constructor(file: string, logger: Logger) {
    this.#file = file;
    this.#logger = logger;
  }

  /** Reads the journal, and rewrites it compacted when that drops anything. */
  async open(): Promise<JournalState> {
    await mkdir(dirname(this.#file), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    let text = "";
    try {
      text = await readFile(this.#file, "utf8");
    } catch (error) {
      if (!isErrnoCode(error, "ENOENT")) throw error;
    }
    const state: JournalState = { tasks: new Map(), firings: new Map() };
    let damaged = 0;
    for (const raw of text.split("\n")) {
      if (raw.trim() === "") continue;
      let parsed: ReturnType<typeof lineSchema.safeParse>;
      try {
        parsed = lineSchema.safeParse(JSON.parse(raw));
      } catch {
        damaged += 1;
        continue;
      }
      if (!parsed.success) {
        damaged += 1;
        continue;
      }
      apply(state, parsed.data);
    }
    if (damaged > 0)
      this.#logger.warn({ file: this.#file, damaged }, "skipped unreadable lines of the tasks journal");
    const finished = [...state.firings.values()].filter(isFinished).sort((a, b) => a.claimedAt - b.claimedAt);
    for (const old of finished.slice(0, Math.max(0, finished.length - KEPT_FIRINGS)))
      state.firings.delete(old.id);
    const lines = [
      ...[...state.tasks.values()].map((task) => JSON.stringify({ type: "task", task })),
      ...[...state.firings.values()].map((firing) => JSON.stringify({ type: "firing", firing })),
    ];
    const compacted = lines.length === 0 ? "" : `${lines.join("\n")}\n`;
    // Rewritten only when it changes (lines replaced, dropped or torn): a plain start costs no disk wait.
    if (compacted !== text) await writeFileDurably(this.#file, compacted, { mode: PRIVATE_FILE_MODE });
    return state;
  }

  /** Appends the lines and resolves once they are on disk (fsynced). */
  append(...lines: readonly JournalLine[]): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    const text = lines.map((line) => JSON.stringify(line)).join("\n");
    const written = new Promise<void>((resolve, reject) => this.#queue.push({ line: text, resolve, reject }));
    this.#writing ??= this.#drain();
    return written;
  }

  /** Waits for every append made so far. */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        try {
          const handle = await open(this.#file, "a", PRIVATE_FILE_MODE);
          try {
            await handle.appendFile(`${batch.map((entry) => entry.line).join("\n")}\n`);
            await handle.datasync();
          } finally {
            await handle.close();
          }
          for (const entry of batch) entry.resolve();
        } catch (error) {
          this.#logger.error({ error: describeError(error) }, "could not write the tasks journal");
          for (const entry of batch) entry.reject(error);
        }
      }
    } finally {
      this.#writing = undefined;
    }
  }
}

/** Folds one journal line into the state. */
export function apply(state: JournalState, line: JournalLine): void {
  if (line.type === "task") state.tasks.set(line.task.id, line.task);
  else if (line.type === "firing") state.firings.set(line.firing.id, line.firing);
  else state.tasks.delete(line.id);
}
