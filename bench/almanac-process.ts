/**
 * The built server as a user runs it, for the benches that measure it from outside (bench/server-process.ts,
 * bench/new-sessions.ts): `almanac start` in its own process, and the CPU it spends (/proc, Linux). Not part of
 * the test run.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { killOnExit } from "./child-cleanup.js";

/** A running `almanac start`. */
export interface RunningServer {
  readonly base: string;
  readonly pid: number;
  /** Spawn → first `/healthz` 200. */
  readonly startMs: number;
  stop(): Promise<void>;
}

/**
 * Spawns `node <nodeArgs> start` (e.g. `["--enable-source-maps", "apps/server/dist/main.js"]`) with `env` and
 * waits for its health endpoint (the port is random: read from its log line). BENCH_KEEP_LOG=1 keeps the
 * server's log after `stop()` (with `--trace-gc`, its collections) and prints its path.
 */
export async function startAlmanac(
  nodeArgs: readonly string[],
  env: Record<string, string>,
): Promise<RunningServer> {
  const started = performance.now();
  // The server's log goes to a file, as a log collector would take it: through a pipe this process drains
  // only when its own event loop gets to it, and the server's logger blocks while the pipe is full.
  const logFile = join(await mkdtemp(join(tmpdir(), "almanac-bench-log-")), "server.log");
  const logFd = openSync(logFile, "a");
  const server = spawn(process.execPath, [...nodeArgs, "start"], {
    env,
    stdio: ["ignore", logFd, logFd],
  });
  closeSync(logFd);
  let output = "";
  const readLog = () => {
    output = readFileSync(logFile, "utf8").slice(0, 100_000);
  };
  const exited = new Promise<void>((resolve) => server.on("exit", () => resolve()));
  killOnExit(server);
  const pid = server.pid;
  if (pid === undefined) throw new Error("server did not start");
  for (;;) {
    readLog();
    if (server.exitCode !== null) throw new Error(`server exited:\n${output}`);
    const found = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
    if (found !== undefined && (await fetch(`${found}/healthz`).catch(() => undefined))?.ok) {
      return {
        base: found,
        pid,
        startMs: performance.now() - started,
        stop: async () => {
          server.kill("SIGTERM");
          await exited;
          if (process.env.BENCH_KEEP_LOG === undefined)
            await rm(dirname(logFile), { recursive: true, force: true });
          else console.error(`server log kept: ${logFile}`);
        },
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * User + system (or system only) CPU time so far, in ms, of a process, or of one of its threads (`thread`: its
 * id; the main thread's is the process id). NaN when it is gone.
 */
export function cpuMs(pid: number, part: "all" | "system" = "all", thread?: number): number {
  const file = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`;
  if (!existsSync(file)) return Number.NaN;
  const stat = readFileSync(file, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const system = Number(fields[12]);
  return (part === "system" ? system : Number(fields[11]) + system) * 10;
}
