import { z } from "zod";
import { CliError, createAdminClient, resolveTarget } from "./admin-client.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";
import { formatTable } from "./sessions-command.js";

const taskList = z.object({
  tasks: z.array(
    z.looseObject({
      id: z.string(),
      sessionKey: z.string(),
      title: z.string(),
      state: z.string(),
      timeZone: z.string(),
      schedule: z.looseObject({ kind: z.string() }),
      nextFireAt: z.number().optional(),
    }),
  ),
});

const DONE = { pause: "paused", resume: "resumed", run: "fired", delete: "deleted" } as const;

const USAGE = "almanac tasks [list] | tasks pause|resume|run|delete <id>";

function when(at: number | undefined, timeZone: string): string {
  if (at === undefined) return "-";
  return new Intl.DateTimeFormat("sv-SE", {
    timeZone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
  }).format(new Date(at));
}

function scheduleText(schedule: Record<string, unknown>): string {
  if (schedule.kind === "cron") return `cron ${String(schedule.expression)}`;
  if (schedule.kind === "every") return `every ${Math.round(Number(schedule.intervalMs) / 60_000)} min`;
  return "once";
}

/** `almanac tasks`: the running server's scheduled tasks; `pause`, `resume`, `run` and `delete` one by id. */
export async function tasksCommand(context: CliContext, args: readonly string[]): Promise<number> {
  const [action = "list", id, ...rest] = args;
  const client = createAdminClient(resolveTarget(context), context.fetch);
  if (action !== "list") {
    if (!["pause", "resume", "run", "delete"].includes(action) || id === undefined || rest.length > 0) {
      writeLine(context.io.stderr, `unknown tasks command: ${args.join(" ")} (usage: ${USAGE})`);
      return EXIT.usage;
    }
    const path = `/api/tasks/${encodeURIComponent(id)}${action === "delete" ? "" : `/${action}`}`;
    const body = await client.json(action === "delete" ? "DELETE" : "POST", path);
    writeLine(
      context.io.stdout,
      context.options.json ? JSON.stringify(body, null, 2) : `${DONE[action as keyof typeof DONE]} ${id}`,
    );
    return EXIT.ok;
  }
  if (id !== undefined) {
    writeLine(context.io.stderr, `unknown tasks command: ${args.join(" ")} (usage: ${USAGE})`);
    return EXIT.usage;
  }
  const parsed = taskList.safeParse(await client.json("GET", "/api/tasks"));
  if (!parsed.success)
    throw new CliError("cli.malformed_response", "GET /api/tasks: unexpected answer shape", EXIT.failure);
  const { tasks } = parsed.data;
  if (context.options.json) {
    writeLine(context.io.stdout, JSON.stringify({ tasks }, null, 2));
    return EXIT.ok;
  }
  if (tasks.length === 0) {
    writeLine(context.io.stdout, "no scheduled tasks");
    return EXIT.ok;
  }
  const rows = tasks.map((task) => [
    task.id,
    task.state,
    when(task.nextFireAt, task.timeZone),
    scheduleText(task.schedule),
    task.sessionKey,
    task.title,
  ]);
  writeLine(
    context.io.stdout,
    formatTable(["ID", "STATE", "NEXT (LOCAL)", "SCHEDULE", "CONVERSATION", "TITLE"], rows),
  );
  return EXIT.ok;
}
