import type { Schedule } from "./schedule.js";

/** A task: what the assistant does, when, and in which conversation. */
export interface TaskRecord {
  /** Short and easy to type: `T7K2QD`. */
  readonly id: string;
  /** The conversation the task belongs to: it runs there, with that conversation's memory scope and tools. */
  readonly sessionKey: string;
  /** A few words shown in lists (the instruction's start unless given). */
  readonly title: string;
  /** What the assistant is told when the task fires. */
  readonly instruction: string;
  readonly schedule: Schedule;
  /** The time zone its times are shown in (and a cron expression read in). */
  readonly timeZone: string;
  /** `done`: a one-shot that fired; `cancelled`: cancelled by a person or the assistant. */
  readonly state: "active" | "paused" | "done" | "cancelled";
  /** `heartbeat`: the owner's periodic check (configuration, not a tool, made it). */
  readonly kind: "task" | "heartbeat";
  readonly createdAt: number;
  /** `assistant` (a tool call), `api`, `console`, or `config`. */
  readonly createdBy: string;
  /** When it fires next (absent once it never will). */
  readonly nextFireAt?: number;
  readonly lastFiredAt?: number;
}

/**
 * One firing of a task, through its states: `claimed` (recorded before its turn), `answered` (the turn's reply
 * recorded), `delivering` (the send began), then one final state: `delivered`, `silent` (a heartbeat with nothing
 * to say), `failed` (retries exhausted; the reason kept), `missed` (due while the server was down, past the grace:
 * reported, not run), `uncertain` (the server died during a send the platform cannot deduplicate: it may or may
 * not have arrived, and is not sent again).
 */
export interface FiringRecord {
  readonly id: string;
  readonly taskId: string;
  readonly sessionKey: string;
  /** When the schedule said it was due. */
  readonly dueAt: number;
  readonly claimedAt: number;
  readonly state:
    | "claimed"
    | "answered"
    | "delivering"
    | "delivered"
    | "silent"
    | "failed"
    | "missed"
    | "uncertain";
  /** Ran after its time (the server was down or busy past the grace of a timely firing). */
  readonly late: boolean;
  /** Too late to run: its reply is the notice that says so, and it ends `missed` once that is delivered. */
  readonly missed?: boolean;
  /** Turns and sends tried. */
  readonly attempts: number;
  /** The text delivered (or to deliver). */
  readonly reply?: string;
  readonly lastError?: string;
  readonly finishedAt?: number;
  /** When the send began (a repeat after a crash is safe only within the platform's deduplication window). */
  readonly deliveringAt?: number;
  /** When a failed attempt is tried again. */
  readonly retryAt?: number;
}

/** What the scheduler tells the world (metrics, live events, logs). */
export type TaskEvent =
  | { readonly type: "task-changed"; readonly task: TaskRecord }
  | { readonly type: "task-deleted"; readonly taskId: string }
  | { readonly type: "firing-changed"; readonly firing: FiringRecord; readonly task: TaskRecord | undefined };
