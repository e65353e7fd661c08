import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { isErrnoCode } from "@almanac/core";
import { createTaskTools, TaskScheduler } from "@almanac/tasks";
import fp from "fastify-plugin";
import { heartbeatPrompt, SILENT_ANSWER, taskInbound, taskPrompt } from "../tasks/task-turns.js";
import type { ServerToolSource } from "../tools/tool-catalog.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Reminders, recurring tasks and the heartbeat; started by `startServer` once the channels are connected. */
    tasks: TaskScheduler;
    /** The task tools (create, list, cancel) of a conversation, as a tool source. */
    taskTools: ServerToolSource;
    /** Opens the schedule, resumes and catches up, and keeps the heartbeat as configured (`startServer`). */
    startTasks(): Promise<void>;
  }
}

/** The heartbeat runs in a conversation of its own (owner scope), so its silent checks stay out of the chat. */
export const HEARTBEAT_SESSION = "api:default:api:heartbeat";
const HEARTBEAT_ID = "heartbeat";
/** Active tasks one conversation may have (a shared chat cannot fill the schedule). */
const MAX_TASKS_PER_CONVERSATION = 50;

/**
 * The schedule: tasks fire as turns in the conversation that created them (through the session manager, so in
 * order with that conversation's messages) and their replies go out through the conversation's channel. Stopped
 * before the sessions close: a firing in flight finishes or is resumed by the next start.
 */
export const tasksPlugin = fp(
  async (app) => {
    const { config } = app;
    const timeZone = config.memory.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
    const heartbeatFile = join(config.home, "workspace", "HEARTBEAT.md");
    const scheduler: TaskScheduler = new TaskScheduler({
      file: join(config.home, "state", "tasks", "journal.jsonl"),
      logger: app.log,
      graceMs: config.tasks.graceMs,
      maxConcurrent: config.tasks.maxConcurrent,
      isSilent: (text, task) =>
        task.kind === "heartbeat" && (text.trim() === SILENT_ANSWER || text.trim() === ""),
      onEvent: (event) => {
        if (event.type === "firing-changed")
          app.metrics.taskFirings.inc({ state: event.firing.state, late: String(event.firing.late) });
        app.events.publish(event);
      },
      runner: {
        runTurn: async (task, firing) => {
          const now = Date.now();
          let text: string;
          if (task.kind === "heartbeat") {
            const checklist = await readChecklist(heartbeatFile);
            // Nothing to check: no turn, nothing said.
            if (checklist === "") return SILENT_ANSWER;
            text = heartbeatPrompt(checklist, now, task.timeZone);
          } else {
            text = taskPrompt(task, firing, now);
          }
          const runIn = task.kind === "heartbeat" ? { ...firing, sessionKey: HEARTBEAT_SESSION } : firing;
          const result = await app.sessions.handle({
            inbound: taskInbound(runIn, text, now),
            scheduled: true,
            // An approval the turn needs is asked where the task speaks.
            notify: async (note, buttons) => {
              await app.channels.deliver({
                sessionKey: task.sessionKey,
                text: note,
                ...(buttons === undefined ? {} : { buttons }),
              });
            },
          });
          return result.text;
        },
        deliver: async (task, firing, text) => {
          // The console's and the API's conversations have the reply in their transcript already (the heartbeat's
          // is in its own conversation: those speak through the live events).
          await app.channels.deliver({ sessionKey: task.sessionKey, text, idempotencyKey: firing.id });
          app.events.publish({ type: "task-delivered", taskId: task.id, sessionKey: task.sessionKey, text });
        },
        canRepeatSend: (sessionKey, since) => app.channels.canRepeatSend(sessionKey, since),
      },
    });
    // Read now, while the disk is quiet: once the server listens, the memory index's first walk queues ahead of it.
    scheduler.load();
    app.decorate("tasks", scheduler);
    app.decorate("taskTools", {
      name: "tasks",
      tools: (_scope, sessionKey) =>
        createTaskTools({
          scheduler,
          sessionKey,
          timeZone,
          now: Date.now,
          maxActive: MAX_TASKS_PER_CONVERSATION,
        }),
    });
    app.decorate("startTasks", async () => {
      await scheduler.start();
      await syncHeartbeat(scheduler, config.tasks, timeZone);
    });
    app.addHook("preClose", async () => {
      await scheduler.stop();
    });
  },
  { name: PLUGIN.tasks, fastify: "5.x", dependencies: [PLUGIN.config, PLUGIN.telemetry, PLUGIN.memory] },
);

/** The checklist's text, or "" when there is none. */
async function readChecklist(file: string): Promise<string> {
  try {
    return (await readFile(file, "utf8")).trim();
  } catch (error) {
    if (isErrnoCode(error, "ENOENT")) return "";
    throw error;
  }
}

/** Keeps the heartbeat task as configured: created, changed, or removed when switched off. */
async function syncHeartbeat(
  scheduler: TaskScheduler,
  settings: { readonly heartbeatMinutes: number; readonly heartbeatSession?: string | undefined },
  timeZone: string,
): Promise<void> {
  const existing = scheduler.task(HEARTBEAT_ID);
  const { heartbeatMinutes, heartbeatSession } = settings;
  if (heartbeatMinutes === 0 || heartbeatSession === undefined) {
    if (existing !== undefined) await scheduler.delete(HEARTBEAT_ID);
    return;
  }
  const intervalMs = heartbeatMinutes * 60_000;
  const same =
    existing !== undefined &&
    existing.state === "active" &&
    existing.sessionKey === heartbeatSession &&
    existing.schedule.kind === "every" &&
    existing.schedule.intervalMs === intervalMs;
  if (same) return;
  await scheduler.create({
    id: HEARTBEAT_ID,
    kind: "heartbeat",
    sessionKey: heartbeatSession,
    title: "heartbeat",
    instruction: "Read HEARTBEAT.md and speak only if something needs attention.",
    schedule: { kind: "every", intervalMs, anchor: Date.now() + intervalMs },
    timeZone,
    createdBy: "config",
  });
}
