import { defineTool, type Tool } from "@almanac/agent";
import { z } from "zod";
import { describeSchedule, formatLocal, nextFireTimes, ScheduleError, scheduleFrom } from "./schedule.js";
import type { TaskScheduler } from "./task-scheduler.js";
import type { TaskRecord } from "./task-types.js";

/** Options of {@link createTaskTools}: the conversation the tools act for. */
export interface TaskToolOptions {
  readonly scheduler: TaskScheduler;
  readonly sessionKey: string;
  /** The person's time zone: times are read and shown in it unless a call names another. */
  readonly timeZone: string;
  readonly now: () => number;
  /** Active tasks the conversation may have; creating more is refused (a shared chat cannot fill the schedule). */
  readonly maxActive?: number;
}

const createParameters = z.object({
  instruction: z
    .string()
    .min(1)
    .max(4000)
    .describe("What to do when it fires, e.g. 'Remind them to call the bank.'"),
  title: z.string().max(80).optional(),
  at: z.string().optional().describe("Once, at a local time: '2026-12-07T09:00'."),
  in: z.string().optional().describe("Once, after a delay: '20 minutes', '2h'."),
  cron: z.string().optional().describe("Recurring, five-field cron in timeZone: '30 8 * * 1'."),
  every: z.string().optional().describe("Recurring interval, at least 1 minute: '1h'."),
  timeZone: z.string().optional().describe("IANA zone, default the person's."),
});
const listParameters = z.object({});
const cancelParameters = z.object({ id: z.string().min(1) });

/** One task as the tools show it: what, when next, in the person's time zone. */
function describeTask(task: TaskRecord, now: number): string {
  const next =
    task.nextFireAt === undefined ? "no further runs" : `next ${formatLocal(task.nextFireAt, task.timeZone)}`;
  const upcoming = nextFireTimes(task.schedule, now, 3).map((at) => formatLocal(at, task.timeZone));
  return [
    `${task.id} [${task.state}] "${task.title}": ${describeSchedule(task.schedule, task.timeZone)}; ${next}`,
    task.schedule.kind === "once" || task.state !== "active" ? "" : `  upcoming: ${upcoming.join("; ")}`,
  ]
    .filter((line) => line !== "")
    .join("\n");
}

/**
 * The task tools of one conversation: create (once at a time, after a delay, on cron or every interval), list and
 * cancel. A task belongs to the conversation that created it and runs there, with that conversation's memory
 * scope and tools. What the model sends is checked; the answer gives the next fire times in the person's time
 * zone, so the model can confirm them in words.
 */
export function createTaskTools(options: TaskToolOptions): Tool[] {
  const { scheduler, sessionKey } = options;
  const create = defineTool({
    name: "task_create",
    description:
      "Schedule a reminder or recurring task in this conversation: an instruction and exactly one of at, in, cron, every. Confirm the next times it answers with.",
    parameters: createParameters,
    async execute(args) {
      const timeZone = args.timeZone ?? options.timeZone;
      let schedule: ReturnType<typeof scheduleFrom>;
      try {
        schedule = scheduleFrom(
          {
            ...(args.at === undefined ? {} : { at: args.at }),
            ...(args.in === undefined ? {} : { in: args.in }),
            ...(args.cron === undefined ? {} : { cron: args.cron }),
            ...(args.every === undefined ? {} : { every: args.every }),
            timeZone,
          },
          options.now(),
        );
      } catch (error) {
        if (error instanceof ScheduleError) return { content: error.message, isError: true };
        throw error;
      }
      const active = scheduler.tasks({ sessionKey }).filter((task) => task.state === "active").length;
      if (options.maxActive !== undefined && active >= options.maxActive)
        return {
          content: `This conversation already has ${active} scheduled tasks (the limit is ${options.maxActive}); cancel some with task_cancel first.`,
          isError: true,
        };
      const task = await scheduler.create({
        sessionKey,
        instruction: args.instruction,
        ...(args.title === undefined ? {} : { title: args.title }),
        schedule,
        timeZone,
        createdBy: "assistant",
      });
      return `Scheduled task ${task.id}.\n${describeTask(task, options.now())}`;
    },
  });
  const list = defineTool({
    name: "task_list",
    description: "This conversation's scheduled tasks and their next times.",
    parameters: listParameters,
    async execute() {
      const tasks = scheduler
        .tasks({ sessionKey })
        .filter((task) => task.state === "active" || task.state === "paused");
      if (tasks.length === 0) return "No scheduled tasks in this conversation.";
      return tasks.map((task) => describeTask(task, options.now())).join("\n");
    },
  });
  const cancel = defineTool({
    name: "task_cancel",
    description: "Cancel a scheduled task of this conversation by id.",
    parameters: cancelParameters,
    async execute({ id }) {
      const task = scheduler.task(id);
      if (task === undefined || task.sessionKey !== sessionKey)
        return { content: `There is no task ${id} in this conversation (see task_list).`, isError: true };
      const cancelled = await scheduler.cancel(task.id);
      return `Cancelled task ${cancelled?.id ?? task.id} ("${task.title}"); it will not run again.`;
    },
  });
  return [create, list, cancel] as unknown as Tool[];
}
