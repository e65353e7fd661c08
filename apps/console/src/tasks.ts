// Scheduled tasks as the console reads and shows them (the Tasks page): reminders, recurring tasks, the heartbeat.
import { api, taskPath } from "./api.js";
import { conversationOf } from "./conversations.js";
import type { LiveEvent } from "./live.js";
import { asArray, asRecord, num, str } from "./read.js";

/** When a task fires (the server's `Schedule`): once, on a cron expression in a time zone, or every interval. */
export type Schedule =
  | { readonly kind: "once"; readonly at: number }
  | { readonly kind: "cron"; readonly expression: string; readonly timeZone: string }
  | { readonly kind: "every"; readonly intervalMs: number; readonly anchor: number };

/** Where a task stands: `done` is a one-shot that fired, `cancelled` was cancelled by a person or the assistant. */
export type TaskState = "active" | "paused" | "done" | "cancelled";

const TASK_STATES: readonly TaskState[] = ["active", "paused", "done", "cancelled"];

/** One task (`GET /api/tasks`, `task-changed` events). */
export interface Task {
  readonly id: string;
  /** The conversation it belongs to and speaks in. */
  readonly sessionKey: string;
  readonly title: string;
  /** What the assistant is told when it fires. */
  readonly instruction: string;
  readonly schedule: Schedule;
  /** The time zone its times are shown in. */
  readonly timeZone: string;
  readonly state: TaskState;
  /** `heartbeat`: the owner's periodic check, made by the configuration. */
  readonly kind: "task" | "heartbeat";
  readonly createdAt: number;
  readonly createdBy: string;
  readonly nextFireAt?: number;
  readonly lastFiredAt?: number;
}

/** Where one firing of a task stands (the server's `FiringRecord` states; the last five are final). */
export type FiringState =
  | "claimed"
  | "answered"
  | "delivering"
  | "delivered"
  | "silent"
  | "failed"
  | "missed"
  | "uncertain";

const FIRING_STATES: readonly FiringState[] = [
  "claimed",
  "answered",
  "delivering",
  "delivered",
  "silent",
  "failed",
  "missed",
  "uncertain",
];

/** One firing of a task: its turn and the delivery of its reply (`GET /api/tasks/{id}`, `firing-changed`). */
export interface Firing {
  readonly id: string;
  readonly taskId: string;
  readonly sessionKey: string;
  /** When the schedule said it was due. */
  readonly dueAt: number;
  readonly claimedAt: number;
  readonly state: FiringState;
  /** It ran after its time. */
  readonly late: boolean;
  /** Too late to run: its reply is the notice saying so. */
  readonly missed: boolean;
  /** Failed attempts at its turn or its send so far (0 once its turn answered; the send counts again). */
  readonly attempts: number;
  /** The text delivered (or to deliver). */
  readonly reply?: string;
  readonly lastError?: string;
  readonly finishedAt?: number;
  readonly retryAt?: number;
}

function readSchedule(value: unknown): Schedule | undefined {
  const record = asRecord(value);
  switch (record.kind) {
    case "once": {
      const at = num(record.at);
      return at === undefined ? undefined : { kind: "once", at };
    }
    case "cron": {
      const expression = str(record.expression);
      return expression === "" ? undefined : { kind: "cron", expression, timeZone: str(record.timeZone) };
    }
    case "every": {
      const intervalMs = num(record.intervalMs);
      const anchor = num(record.anchor);
      return intervalMs === undefined || intervalMs <= 0 || anchor === undefined
        ? undefined
        : { kind: "every", intervalMs, anchor };
    }
    default:
      return undefined;
  }
}

/** One task of untrusted JSON, or undefined when it lacks what the page needs to show and act on it. */
export function readTask(value: unknown): Task | undefined {
  const record = asRecord(value);
  const id = str(record.id);
  const state = TASK_STATES.find((known) => known === record.state);
  const schedule = readSchedule(record.schedule);
  if (id === "" || state === undefined || schedule === undefined) return undefined;
  const nextFireAt = num(record.nextFireAt);
  const lastFiredAt = num(record.lastFiredAt);
  return {
    id,
    sessionKey: str(record.sessionKey),
    title: str(record.title) || id,
    instruction: str(record.instruction),
    schedule,
    timeZone: str(record.timeZone, "UTC"),
    state,
    kind: record.kind === "heartbeat" ? "heartbeat" : "task",
    createdAt: num(record.createdAt) ?? 0,
    createdBy: str(record.createdBy),
    ...(nextFireAt === undefined ? {} : { nextFireAt }),
    ...(lastFiredAt === undefined ? {} : { lastFiredAt }),
  };
}

/** One firing of untrusted JSON, or undefined when it cannot be shown. */
export function readFiring(value: unknown): Firing | undefined {
  const record = asRecord(value);
  const id = str(record.id);
  const state = FIRING_STATES.find((known) => known === record.state);
  const dueAt = num(record.dueAt);
  if (id === "" || state === undefined || dueAt === undefined) return undefined;
  const finishedAt = num(record.finishedAt);
  const retryAt = num(record.retryAt);
  return {
    id,
    taskId: str(record.taskId),
    sessionKey: str(record.sessionKey),
    dueAt,
    claimedAt: num(record.claimedAt) ?? dueAt,
    state,
    late: record.late === true,
    missed: record.missed === true,
    attempts: num(record.attempts) ?? 0,
    ...(typeof record.reply === "string" ? { reply: record.reply } : {}),
    ...(typeof record.lastError === "string" && record.lastError !== ""
      ? { lastError: record.lastError }
      : {}),
    ...(finishedAt === undefined ? {} : { finishedAt }),
    ...(retryAt === undefined ? {} : { retryAt }),
  };
}

/** The firings of a JSON array that can be read, in the order given. */
export function readFirings(value: unknown): Firing[] {
  return asArray(value).flatMap((item) => readFiring(item) ?? []);
}

/** True while a task may still fire by its schedule (active or paused); done and cancelled ones are history. */
export function isScheduled(task: Task): boolean {
  return task.state === "active" || task.state === "paused";
}

/**
 * The tasks as the page lists them: the scheduled ones (active by their next time, soonest first, then the
 * paused ones), and the finished ones, most recent first.
 */
export function groupTasks(tasks: readonly Task[]): { scheduled: Task[]; finished: Task[] } {
  const next = (task: Task) => task.nextFireAt ?? Number.POSITIVE_INFINITY;
  const rank = (task: Task) => (task.state === "active" ? 0 : 1);
  const scheduled = tasks
    .filter(isScheduled)
    .sort((a, b) => rank(a) - rank(b) || next(a) - next(b) || a.createdAt - b.createdAt);
  const latest = (task: Task) => Math.max(task.lastFiredAt ?? 0, task.createdAt);
  const finished = tasks.filter((task) => !isScheduled(task)).sort((a, b) => latest(b) - latest(a));
  return { scheduled, finished };
}

/** The tasks after `task` was created or changed: added, or put in the place of the one with its id. */
export function withTask(tasks: readonly Task[], task: Task): Task[] {
  const index = tasks.findIndex((known) => known.id === task.id);
  if (index < 0) return [...tasks, task];
  return tasks.map((known, at) => (at === index ? task : known));
}

/** The tasks after the one with `id` was deleted. */
export function withoutTask(tasks: readonly Task[], id: string): Task[] {
  return tasks.filter((task) => task.id !== id);
}

/** The firings after `firing` moved on: replaced or added, newest claimed first, at most `limit` kept. */
export function withFiring(firings: readonly Firing[], firing: Firing, limit = 100): Firing[] {
  return [...firings.filter((known) => known.id !== firing.id), firing]
    .sort((a, b) => b.claimedAt - a.claimedAt)
    .slice(0, limit);
}

/**
 * The tasks after a live event: `task-changed` adds or replaces one, `task-deleted` drops one, and a
 * `firing-changed` brings its task as it is now (its last firing time), which replaces a task listed already
 * (never adds one: the task may be gone, its firings still finishing).
 */
export function applyTaskEvent(tasks: Task[], event: LiveEvent): Task[] {
  switch (event.type) {
    case "task-changed": {
      const task = readTask(event.data.task);
      return task === undefined ? tasks : withTask(tasks, task);
    }
    case "task-deleted":
      return withoutTask(tasks, str(event.data.taskId));
    case "firing-changed": {
      const task = readTask(event.data.task);
      return task === undefined || !tasks.some((known) => known.id === task.id)
        ? tasks
        : withTask(tasks, task);
    }
    default:
      return tasks;
  }
}

/** One task as its detail shows it: the task (until deleted) and its firings, newest first. */
export interface TaskDetail {
  readonly task: Task | undefined;
  readonly firings: readonly Firing[];
}

/**
 * A task's detail after a live event about it (events about other tasks leave it as it is; a deleted task's
 * detail goes with its place in the list).
 */
export function applyTaskDetailEvent(detail: TaskDetail, id: string, event: LiveEvent): TaskDetail {
  switch (event.type) {
    case "task-changed": {
      const task = readTask(event.data.task);
      return task?.id === id ? { ...detail, task } : detail;
    }
    case "firing-changed": {
      const firing = readFiring(event.data.firing);
      if (firing?.taskId !== id) return detail;
      return { ...detail, firings: withFiring(detail.firings, firing) };
    }
    default:
      return detail;
  }
}

/** The recent firings of every task after a live event: a `firing-changed` adds or replaces one. */
export function applyFiringEvent(
  firings: readonly Firing[],
  event: LiveEvent,
  limit: number,
): readonly Firing[] {
  if (event.type !== "firing-changed") return firings;
  const firing = readFiring(event.data.firing);
  return firing === undefined ? firings : withFiring(firings, firing, limit);
}

/** Every task (`GET /api/tasks`). */
export async function loadTasks(): Promise<Task[]> {
  return asArray(asRecord(await api("/api/tasks")).tasks).flatMap((item) => readTask(item) ?? []);
}

/** One task and its firings, newest first (`GET /api/tasks/{id}`); the task is undefined when unreadable. */
export async function loadTaskDetail(id: string): Promise<TaskDetail> {
  const body = asRecord(await api(taskPath(id)));
  return { task: readTask(body.task), firings: readFirings(body.firings) };
}

/** The recent firings of every task, newest first (`GET /api/tasks/firings`). */
export async function loadRecentFirings(limit: number): Promise<Firing[]> {
  return readFirings(asRecord(await api(`/api/tasks/firings?limit=${limit}`)).firings);
}

/** How a new task is to fire, as the form asks it: one of the server's four ways, with its text. */
export type TaskWhen =
  | { readonly kind: "at"; readonly value: string }
  | { readonly kind: "in"; readonly value: string }
  | { readonly kind: "every"; readonly value: string }
  | { readonly kind: "cron"; readonly value: string };

/** What the form sends to create a task. */
export interface NewTask {
  readonly sessionKey: string;
  readonly instruction: string;
  readonly title?: string;
  readonly when: TaskWhen;
  readonly timeZone?: string;
}

/**
 * The body of `POST /api/tasks` for a new task: exactly one of `at`, `in`, `cron`, `every`, as typed (the server
 * reads and checks it, and says what to send when it cannot use it).
 */
export function createTaskBody(task: NewTask): Record<string, string> {
  const title = task.title?.trim();
  const timeZone = task.timeZone?.trim();
  return {
    sessionKey: task.sessionKey,
    instruction: task.instruction.trim(),
    ...(title ? { title } : {}),
    [task.when.kind]: task.when.value.trim(),
    ...(timeZone ? { timeZone } : {}),
    via: "console",
  };
}

/** Creates a task; resolves with it, rejects with an `ApiError` (`task.schedule_invalid` says what to send). */
export async function createTask(task: NewTask): Promise<Task | undefined> {
  return readTask(await api("/api/tasks", { method: "POST", body: createTaskBody(task) }));
}

/** What the page can do to a task. */
export type TaskAction = "pause" | "resume" | "run" | "delete";

/** Pauses, resumes, runs now or deletes a task; rejects with an `ApiError`. */
export async function changeTask(id: string, action: TaskAction): Promise<void> {
  if (action === "delete") await api(taskPath(id), { method: "DELETE" });
  else await api(`${taskPath(id)}/${action}`, { method: "POST" });
}

/** A conversation a new task can belong to, as the form offers it. */
export interface ConversationChoice {
  readonly sessionKey: string;
  readonly label: string;
}

/** A session of `GET /api/sessions` as far as the form needs it. */
export interface SessionSummary {
  readonly key: string;
  readonly title: string;
  readonly lastActivity: number | undefined;
}

/** A conversation in words: a console chat by its title (or id), any other session by its key and title. */
export function conversationLabel(sessionKey: string, title: string): string {
  const chat = conversationOf(sessionKey);
  if (chat !== undefined) return `Chat: ${title || chat}`;
  return title ? `${sessionKey} (${title})` : sessionKey;
}

/**
 * The conversations a task can be given to: the console's own conversation first (`ownKey`, listed even before
 * it has a session), then the console's other chats and every other session, most recent activity first.
 */
export function conversationChoices(
  sessions: readonly SessionSummary[],
  ownKey: string,
): ConversationChoice[] {
  const own = sessions.find((session) => session.key === ownKey);
  const others = sessions
    .filter((session) => session.key !== ownKey)
    .sort((a, b) => {
      const chat = (session: SessionSummary) => (conversationOf(session.key) === undefined ? 1 : 0);
      return chat(a) - chat(b) || (b.lastActivity ?? 0) - (a.lastActivity ?? 0);
    });
  return [
    { sessionKey: ownKey, label: `This console's chat: ${own?.title || conversationOf(ownKey) || ownKey}` },
    ...others.map((session) => ({
      sessionKey: session.key,
      label: conversationLabel(session.key, session.title),
    })),
  ];
}

/** The sessions of `GET /api/sessions` (untrusted JSON) a task can be given to. */
export async function loadSessionSummaries(): Promise<SessionSummary[]> {
  return asArray(asRecord(await api("/api/sessions")).sessions)
    .map(asRecord)
    .map((session) => ({
      key: str(session.key),
      title: str(session.title).trim(),
      lastActivity: num(session.lastActivity),
    }))
    .filter((session) => session.key !== "");
}
