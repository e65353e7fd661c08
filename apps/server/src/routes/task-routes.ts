import { parseSessionKey, UserError } from "@almanac/core";
import { ScheduleError, scheduleFrom, type TaskScheduler } from "@almanac/tasks";
import type { FastifyInstance } from "fastify";
import { z } from "zod";

const idParams = z.object({ id: z.string().min(1).max(64) });
const createBody = z.object({
  sessionKey: z.string().min(1),
  instruction: z.string().min(1).max(4000),
  title: z.string().max(80).optional(),
  at: z.string().optional(),
  in: z.string().optional(),
  cron: z.string().optional(),
  every: z.string().optional(),
  timeZone: z.string().optional(),
  /** Where the owner created it, for the record (the console says so). */
  via: z.enum(["api", "console"]).default("api"),
});
const listQuery = z.object({ sessionKey: z.string().optional() });
const historyQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) });

/** A query string as the route takes it, or a 400 that says what it takes. */
function queryOf<T>(schema: z.ZodType<T>, query: unknown): T {
  const parsed = schema.safeParse(query);
  if (!parsed.success) throw new UserError("request.invalid", "limit must be a number from 1 to 500.");
  return parsed.data;
}

/**
 * `/api/tasks`: list, create, pause, resume, delete, run now, and the history of firings with their outcomes.
 * A task created here belongs to the conversation named by `sessionKey` and runs there, with its scope.
 */
export function registerTaskRoutes(app: FastifyInstance, tasks: TaskScheduler, timeZone: string): void {
  const known = (id: string) => {
    const task = tasks.task(id);
    if (task === undefined) throw new UserError("task.not_found", `No task ${id}.`);
    return task;
  };
  const idOf = (params: unknown) => {
    const parsed = idParams.safeParse(params);
    if (!parsed.success) throw new UserError("request.invalid", "A task id is required in the path.");
    return parsed.data.id;
  };

  app.get(
    "/api/tasks",
    { schema: { tags: ["admin"], summary: "Scheduled tasks, next first" } },
    async (request) => {
      const query = queryOf(listQuery, request.query);
      return {
        tasks: tasks.tasks(query.sessionKey === undefined ? {} : { sessionKey: query.sessionKey }),
        counts: tasks.counts(),
      };
    },
  );

  app.post(
    "/api/tasks",
    { schema: { tags: ["admin"], summary: "Create a task in a conversation" } },
    async (request, reply) => {
      const body = createBody.safeParse(request.body);
      if (!body.success)
        throw new UserError(
          "request.invalid",
          'Send {"sessionKey", "instruction"} and one of "at" (local time), "in" (delay), "cron" or "every"; "timeZone" optional.',
        );
      const { sessionKey, instruction, title, via, ...when } = body.data;
      try {
        parseSessionKey(sessionKey);
      } catch (error) {
        throw new UserError("session.key_invalid", `"${sessionKey}" is not a session key.`, { cause: error });
      }
      const zone = when.timeZone ?? timeZone;
      let schedule: ReturnType<typeof scheduleFrom>;
      try {
        schedule = scheduleFrom({ ...when, timeZone: zone }, Date.now());
      } catch (error) {
        if (error instanceof ScheduleError) throw new UserError("task.schedule_invalid", error.message);
        throw error;
      }
      const task = await tasks.create({
        sessionKey,
        instruction,
        ...(title === undefined ? {} : { title }),
        schedule,
        timeZone: zone,
        createdBy: via,
      });
      return reply.status(201).send(task);
    },
  );

  app.get(
    "/api/tasks/:id",
    { schema: { tags: ["admin"], summary: "One task and its firings" } },
    async (request) => {
      const task = known(idOf(request.params));
      const { limit } = queryOf(historyQuery, request.query);
      return { task, firings: tasks.firings({ taskId: task.id, limit }) };
    },
  );

  for (const action of ["pause", "resume"] as const) {
    app.post(
      `/api/tasks/:id/${action}`,
      { schema: { tags: ["admin"], summary: `${action} a task` } },
      async (request) => {
        const task = known(idOf(request.params));
        return (await tasks[action](task.id)) ?? task;
      },
    );
  }

  app.post(
    "/api/tasks/:id/run",
    { schema: { tags: ["admin"], summary: "Fire a task now (its schedule unchanged)" } },
    async (request, reply) => {
      const task = known(idOf(request.params));
      return reply.status(202).send(await tasks.runNow(task.id));
    },
  );

  app.delete(
    "/api/tasks/:id",
    { schema: { tags: ["admin"], summary: "Delete a task (its history stays)" } },
    async (request) => {
      const task = known(idOf(request.params));
      await tasks.delete(task.id);
      return { id: task.id, deleted: true };
    },
  );

  app.get(
    "/api/tasks/firings",
    { schema: { tags: ["admin"], summary: "Recent firings of every task, newest first" } },
    async (request) => {
      const { limit } = queryOf(historyQuery, request.query);
      return { firings: tasks.firings({ limit }) };
    },
  );
}
