/**
 * Scheduled tasks under load (not part of the test run): 1,000 tasks due in the same second, each a turn of the
 * scripted model in a conversation of its own, while one person chats. Printed: how long until every task was
 * delivered (and that each was delivered exactly once), and a chat turn's latency before and while the tasks
 * fire. The server runs in this process from the TypeScript sources (bench/in-process-server.ts), with its
 * defaults (4 tasks at once).
 *
 * Run: node --import tsx bench/tasks.ts [--tasks 1000] [--json <file>]
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Figures, jsonOption } from "./figures.js";
import { BENCH_TOKEN, startInProcessServer } from "./in-process-server.js";
import { percentile } from "./sample-stats.js";

const { values } = parseArgs({ options: { tasks: { type: "string", default: "1000" }, ...jsonOption } });
const TASKS = Number(values.tasks);
const figures = new Figures(values.json);

const server = await startInProcessServer("warn");
const api = async (path: string, init: RequestInit = {}) => {
  const response = await fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${BENCH_TOKEN}`, "content-type": "application/json" },
  });
  return response.json() as Promise<unknown>;
};
const chatTurn = async (): Promise<number> => {
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${BENCH_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "almanac",
      user: "person",
      messages: [{ role: "user", content: "hello" }],
    }),
  });
  await response.json();
  return performance.now() - started;
};

try {
  // Create the tasks, all due at the same instant a little ahead (creation is not what is measured).
  const createdAt = performance.now();
  const dueAt = Date.now() + 15_000 + TASKS * 5;
  const at = new Date(dueAt).toISOString();
  for (let start = 0; start < TASKS; start += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, TASKS - start) }, (_, offset) =>
        api("/api/tasks", {
          method: "POST",
          body: JSON.stringify({
            sessionKey: `api:default:api:task-${start + offset}`,
            instruction: `Say the number ${start + offset}.`,
            at,
          }),
        }),
      ),
    );
  }
  console.log(
    `created ${TASKS} tasks in ${((performance.now() - createdAt) / 1000).toFixed(1)} s, all due at ${at}`,
  );

  // A person chats throughout: before the tasks are due (the baseline) and while they fire.
  for (let warm = 0; warm < 50; warm += 1) await chatTurn();
  const before: number[] = [];
  while (Date.now() < dueAt - 500) before.push(await chatTurn());
  const during: number[] = [];
  let firstDelivered: number | undefined;
  let allDelivered: number | undefined;
  let delivered = 0;
  const watch = (async () => {
    for (;;) {
      const body = (await api("/api/tasks?sessionKey=api:default:api:none")) as {
        counts: { firings: Record<string, number> };
      };
      delivered = body.counts.firings.delivered ?? 0;
      if (delivered > 0) firstDelivered ??= Date.now();
      if (delivered >= TASKS) {
        allDelivered = Date.now();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  while (allDelivered === undefined) {
    during.push(await chatTurn());
    if (Date.now() - dueAt > 600_000) break;
  }
  await watch;
  const history = (await api(`/api/tasks/firings?limit=500`)) as { firings: Array<{ state: string }> };
  const counts = (await api("/api/tasks")) as { counts: { firings: Record<string, number> } };
  const sum = (list: number[], p: number) => percentile(list, p).toFixed(1);
  console.log(
    `firings by state: ${JSON.stringify(counts.counts.firings)} (sampled ${history.firings.length})`,
  );
  const seconds = ((allDelivered ?? Number.NaN) - dueAt) / 1000;
  console.log(
    `all ${TASKS} delivered ${seconds.toFixed(1)} s after they were due (first after ${(((firstDelivered ?? Number.NaN) - dueAt) / 1000).toFixed(2)} s)`,
  );
  console.log(
    `a chat turn before: p50 ${sum(before, 50)} ms, p99 ${sum(before, 99)} ms (${before.length} turns)`,
  );
  console.log(
    `a chat turn while the tasks fire: p50 ${sum(during, 50)} ms, p99 ${sum(during, 99)} ms (${during.length} turns)`,
  );
  figures.add("tasks-all-delivered", seconds, "s");
  figures.add(
    "tasks-delivered-exactly-once",
    (counts.counts.firings.delivered ?? 0) === TASKS ? 1 : 0,
    "bool",
  );
  figures.add("tasks-chat-turn-before-p50", percentile(before, 50), "ms");
  figures.add("tasks-chat-turn-during-p50", percentile(during, 50), "ms");
  figures.add("tasks-chat-turn-during-p99", percentile(during, 99), "ms");
  figures.write();
} finally {
  await server.close();
}
