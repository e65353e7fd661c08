/**
 * What 100 conversations starting at once cost the server (not part of the test run): the first turns of
 * bench/server-process.ts's 100 × 10 phase, alone. The built server runs in its own process over an empty
 * home (bench/almanac-process.ts), the scripted model in another (bench/model-process.ts); the client sends one
 * turn each for `--sessions` new conversations at once, waits for all the answers, then (unless `--only-new`) one
 * more turn each for the same conversations, again at once. That is one round; `--rounds` of them, each with new conversations.
 * Printed, per burst: the time until the last answer, and the server's CPU in it, its main thread's and the
 * whole process's (`/proc`). The medians leave out the first `--skip` rounds (V8 still compiling the turn path).
 *
 * Main-thread CPU moves less with the machine's load than the latencies, but on a shared machine still by up to
 * 2× between runs minutes apart: compare builds in alternated runs.
 * The rest of a burst's time is the thread pool's: each new conversation fsyncs its new transcript, and the
 * sessions directory is fsynced for the new entries (in groups; `fsyncDirectory`).
 *
 * Run: node --import tsx bench/new-sessions.ts [--main apps/server/dist/main.js] [--sessions 100] [--rounds 12]
 *      [--skip 4] [--only-new] ["--node-flags=<flags for the server's node, e.g. --cpu-prof --cpu-prof-dir=/tmp/p>"]
 *      [--json <file>]
 * UV_THREADPOOL_SIZE is passed through to the server.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { cpuMs, startAlmanac } from "./almanac-process.js";
import { Figures, jsonOption } from "./figures.js";
import { httpCall } from "./http-call.js";
import { startModelProcess } from "./model-process.js";
import { median } from "./sample-stats.js";

const { values } = parseArgs({
  options: {
    main: { type: "string", default: fileURLToPath(new URL("../apps/server/dist/main.js", import.meta.url)) },
    sessions: { type: "string", default: "100" },
    rounds: { type: "string", default: "12" },
    skip: { type: "string", default: "4" },
    "only-new": { type: "boolean", default: false },
    "node-flags": { type: "string", default: "" },
    ...jsonOption,
  },
});
const sessions = Number(values.sessions);
const rounds = Number(values.rounds);
const skip = Number(values.skip);

const token = "bench-admin-token-0123456789";
const model = await startModelProcess();
const home = await mkdtemp(join(tmpdir(), "almanac-new-sessions-"));
const nodeFlags = values["node-flags"].split(" ").filter(Boolean);
const server = await startAlmanac([...nodeFlags, "--enable-source-maps", values.main], {
  PATH: process.env.PATH ?? "",
  ALMANAC_HOME: home,
  ALMANAC_HOST: "127.0.0.1",
  ALMANAC_PORT: "0",
  ALMANAC_ADMIN_TOKEN: token,
  ALMANAC_LOG_LEVEL: "info",
  ALMANAC_MODEL_BASE_URL: model.baseURL,
  ALMANAC_MODEL_NAME: "scripted-model",
  ALMANAC_MODEL_MAX_RETRIES: "0",
  ALMANAC_SESSION_QUEUE_LIMIT: String(sessions),
  ALMANAC_SESSION_IDLE_UNLOAD_MS: "3600000",
  // Passed through for experiments with libuv's thread pool (where the fsyncs wait).
  ...(process.env.UV_THREADPOOL_SIZE === undefined
    ? {}
    : { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE }),
});
const { base, pid } = server;

const agent = new Agent({ keepAlive: true, maxSockets: sessions * 2 });
const turn = async (user: string): Promise<void> => {
  const { status, text } = await httpCall(
    agent,
    "POST",
    `${base}/v1/chat/completions`,
    { "content-type": "application/json", authorization: `Bearer ${token}` },
    JSON.stringify({ model: "almanac", user, messages: [{ role: "user", content: "hello there" }] }),
  );
  if (status !== 200) throw new Error(`turn failed: ${status} ${text}`);
};

/** CPU (user + system, ms) of the server's main thread, and of the whole process. */
const mainCpu = () => cpuMs(pid, "all", pid);
const processCpu = () => cpuMs(pid);

interface Burst {
  readonly wall: number;
  readonly main: number;
  readonly all: number;
}
const burst = async (users: readonly string[]): Promise<Burst> => {
  const main = mainCpu();
  const all = processCpu();
  const started = performance.now();
  await Promise.all(users.map(turn));
  const wall = performance.now() - started;
  // The fsyncs and the log lines of the last answers land just after them.
  await new Promise((resolve) => setTimeout(resolve, 100));
  return { wall, main: mainCpu() - main, all: processCpu() - all };
};

const bursts: Record<"new" | "existing", Burst[]> = { new: [], existing: [] };
let next = 0;
for (let round = 0; round < rounds; round += 1) {
  const users = Array.from({ length: sessions }, () => `conversation-${next++}`);
  bursts.new.push(await burst(users));
  if (!values["only-new"]) bursts.existing.push(await burst(users));
}
console.log(`node ${process.version}, ${values.main}`);
const figures = new Figures(values.json);
for (const [label, list] of Object.entries(bursts)) {
  if (list.length === 0) continue;
  const shown = list.map(({ wall, main, all }) => `${wall.toFixed(0)}/${main}/${all}`).join(" ");
  console.log(
    `${sessions} ${label === "new" ? "new conversations" : "existing ones"} at once, per round (last answer ms / main CPU ms / process CPU ms): ${shown}`,
  );
  const kept = list.slice(skip);
  console.log(
    `  median of rounds ${skip + 1}–${list.length}: last answer after ${median(kept.map((one) => one.wall)).toFixed(0)} ms, server CPU main ${median(kept.map((one) => one.main))} ms, process ${median(kept.map((one) => one.all))} ms`,
  );
  figures.add(`${label}-last-answer-median`, median(kept.map((one) => one.wall)), "ms");
  figures.add(`${label}-main-thread-cpu-median`, median(kept.map((one) => one.main)), "ms");
  figures.add(`${label}-process-cpu-median`, median(kept.map((one) => one.all)), "ms");
}
figures.write();
await server.stop();
await model.close();
agent.destroy();
await rm(home, { recursive: true, force: true });
