/**
 * Cold start, measured from outside as a user sees it (not part of the test run):
 *  1. `almanac start` spawned → the first `/healthz` that answers 200;
 *  2. a cold `almanac sessions list --json` and `almanac memory search <query>` (each a new process) against
 *     that running server, from spawn to exit.
 * The data directory holds a synthetic year of memory (MEMORY.md + 365 daily logs, ~1.1 MB) and the model is
 * the test kit's scripted server, so the server starts with everything configured.
 *
 * Run: node --import tsx bench/cold-start.ts [--runner bin|dist|source] [--runs 5] [--memory year|empty]
 *      [--json <file>]
 *   bin    `node apps/server/bin/almanac.js` (the build when it is current, else the sources through tsx)
 *   dist   `node --enable-source-maps apps/server/dist/main.js` (build first: `pnpm build`);
 *          dist-no-maps: the same without source maps, to see what they cost
 *   source `node --import tsx apps/server/src/main.ts` (the TypeScript sources through tsx's loader)
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startScriptedLlm } from "@almanac/testkit";
import { killOnExit } from "./child-cleanup.js";
import { Figures, jsonOption } from "./figures.js";
import { median } from "./sample-stats.js";
import { writeYearCorpus } from "./year-corpus.js";

const { values } = parseArgs({
  options: {
    runner: { type: "string", default: "bin" },
    runs: { type: "string", default: "5" },
    memory: { type: "string", default: "year" },
    ...jsonOption,
  },
});
const root = fileURLToPath(new URL("..", import.meta.url));
const runners: Record<string, readonly string[]> = {
  bin: [join(root, "apps/server/bin/almanac.js")],
  dist: ["--enable-source-maps", join(root, "apps/server/dist/main.js")],
  "dist-no-maps": [join(root, "apps/server/dist/main.js")],
  source: ["--import", "tsx", join(root, "apps/server/src/main.ts")],
};
const chosen = runners[values.runner];
if (!chosen) throw new Error(`--runner must be one of ${Object.keys(runners).join(", ")}`);
const runnerArgs: readonly string[] = chosen;
const runs = Number(values.runs);
const TOKEN = "bench-admin-token-0123456789";

const show = (samples: number[]) =>
  `median ${median(samples).toFixed(0)} ms  (runs: ${samples.map((value) => value.toFixed(0)).join(", ")})`;

const llm = await startScriptedLlm({});
const home = await mkdtemp(join(tmpdir(), "almanac-cold-"));
if (values.memory === "year") await writeYearCorpus(join(home, "workspace"));
const env = {
  PATH: process.env.PATH ?? "",
  ALMANAC_HOME: home,
  ALMANAC_PORT: "0",
  ALMANAC_ADMIN_TOKEN: TOKEN,
  ALMANAC_LOG_LEVEL: "info",
  ALMANAC_MODEL_BASE_URL: llm.baseURL,
  ALMANAC_MODEL_NAME: "scripted-model",
};

/**
 * CPU time (user + system) a process has used so far, in ms, from /proc (Linux); NaN elsewhere. On a loaded
 * machine wall time mostly measures the neighbours; CPU time is the process's own work.
 */
function cpuMs(pid: number | undefined): number {
  const file = `/proc/${pid}/stat`;
  if (pid === undefined || !existsSync(file)) return Number.NaN;
  // Fields after the command name: utime and stime are the 12th and 13th (clock ticks, 100 per second).
  const stat = readFileSync(file, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Spawns the server as `pnpm start` does, polls /healthz every 5 ms; resolves with the time to the first 200 and
 * a stop function.
 */
async function coldServer(): Promise<{ ms: number; cpu: number; url: string; stop: () => Promise<void> }> {
  const started = performance.now();
  const child = spawn(process.execPath, [...runnerArgs, "start"], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  killOnExit(child);
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  // The port is random (ALMANAC_PORT=0): read it from the listening line, then poll the health endpoint.
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited:\n${output}`);
    const url = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
    if (url) {
      const answer = await fetch(`${url}/healthz`).catch(() => undefined);
      if (answer?.ok) {
        const ms = performance.now() - started;
        return {
          ms,
          cpu: cpuMs(child.pid),
          url,
          stop: async () => {
            child.kill("SIGTERM");
            await exited;
          },
        };
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

// Preloaded into each CLI process: prints the process's own CPU time (user + system) on exit, on stderr.
const CPU_REPORT = `data:text/javascript,process.on("exit",()=>{const u=process.cpuUsage();process.stderr.write("BENCH_CPU_MS "+((u.user+u.system)/1000)+"\\n")})`;

/** Runs one CLI command in a new process; resolves with spawn-to-exit milliseconds and its CPU time. */
async function coldCommand(url: string, args: readonly string[]): Promise<{ ms: number; cpu: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, ["--import", CPU_REPORT, ...runnerArgs, ...args, "--url", url], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`almanac ${args.join(" ")} exited ${code}:\n${output}`);
  return { ms, cpu: Number(/BENCH_CPU_MS ([\d.]+)/.exec(output)?.[1] ?? Number.NaN) };
}

const startUp: number[] = [];
const startUpCpu: number[] = [];
const sessionsList: number[] = [];
const sessionsListCpu: number[] = [];
const memorySearch: number[] = [];
const memorySearchCpu: number[] = [];
for (let run = 0; run < runs; run += 1) {
  const server = await coldServer();
  startUp.push(server.ms);
  startUpCpu.push(server.cpu);
  // Let the start-up's background work (index sync) settle so the client figures are the client's own.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const listed = await coldCommand(server.url, ["sessions", "list", "--json"]);
  sessionsList.push(listed.ms);
  sessionsListCpu.push(listed.cpu);
  const searched = await coldCommand(server.url, ["memory", "search", "deploy budget"]);
  memorySearch.push(searched.ms);
  memorySearchCpu.push(searched.cpu);
  await server.stop();
}

console.log(`runner: ${values.runner} (node ${runnerArgs.join(" ")}), memory: ${values.memory}`);
console.log(`server start → /healthz 200:          ${show(startUp)}`);
console.log(`  its CPU time (user + system):        ${show(startUpCpu)}`);
console.log(`cold almanac sessions list --json:     ${show(sessionsList)}`);
console.log(`  its CPU time:                        ${show(sessionsListCpu)}`);
console.log(`cold almanac memory search:            ${show(memorySearch)}`);
console.log(`  its CPU time:                        ${show(memorySearchCpu)}`);
console.log(
  `node ${process.version}, load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(" ")}`,
);
const figures = new Figures(values.json);
figures.add("start-to-healthz-median", median(startUp), "ms", { below: 1000 });
figures.add("start-to-healthz-cpu-median", median(startUpCpu), "ms");
figures.add("cold-sessions-list-median", median(sessionsList), "ms");
figures.add("cold-sessions-list-cpu-median", median(sessionsListCpu), "ms");
figures.add("cold-memory-search-median", median(memorySearch), "ms", { below: 400 });
figures.add("cold-memory-search-cpu-median", median(memorySearchCpu), "ms");
figures.write();
await llm.close();
await rm(home, { recursive: true, force: true });
