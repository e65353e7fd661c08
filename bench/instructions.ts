/**
 * Instructions the built server executes a turn, counted by valgrind's callgrind: the one figure of a turn's cost
 * that does not move with a shared machine's load (time and CPU figures move by ±20 % between runs minutes
 * apart; these repeat within ~1–3 %). Each build given runs, in its own process under callgrind, a warm-up and
 * then, `--rounds` times: `--turns` turns in one conversation, `--turns` new conversations of one turn each, and
 * 50 conversations × 4 turns at once; a dump between phases counts each phase alone, for the main thread and
 * for the process's other threads (V8's compiler and collector helpers, libuv's pool), and the start alone (to
 * the first `/healthz` 200). The scripted model runs
 * outside callgrind (bench/model-process.ts). Not part of the test run.
 *
 * Counts are user-space instructions: the kernel's work for a syscall is not in them (compare syscalls with
 * `strace -c`), nor is waiting. A build's warm-up includes its start and its first compilations.
 * Needs valgrind (Debian: `apt-get install valgrind`); a build runs ~20× slower under it (~1.5 min a build).
 *
 * Run: node --import tsx bench/instructions.ts [<label>=<dist/main.js> ...] [--turns 100] [--rounds 3]
 *      [--node <node binary for the server>] [--keep <dir>] [--json <file>]
 * `--keep <dir>` keeps callgrind's files (`<dir>/<label>/callgrind.<part>-<thread>`) for `callgrind_annotate`.
 * (default build: now=apps/server/dist/main.js; the first build given is the one the others are compared with)
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { killOnExit } from "./child-cleanup.js";
import { Figures, jsonOption } from "./figures.js";
import { startModelProcess } from "./model-process.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    turns: { type: "string", default: "100" },
    rounds: { type: "string", default: "3" },
    node: { type: "string", default: process.execPath },
    keep: { type: "string" },
    ...jsonOption,
  },
});

const root = fileURLToPath(new URL("..", import.meta.url));
const builds = (positionals.length > 0 ? positionals : [`now=${join(root, "apps/server/dist/main.js")}`]).map(
  (spec) => {
    const [label, main] = spec.split(/=(.*)/s);
    if (label === undefined || main === undefined || main === "")
      throw new Error(`expected <label>=<dist/main.js>, got ${spec}`);
    return { label, main: resolve(main) };
  },
);
const turns = Number(values.turns);
const rounds = Number(values.rounds);
const token = "bench-admin-token-0123456789";
const CONCURRENT_SESSIONS = 50;
const CONCURRENT_TURNS = 4;

if (spawnSync("valgrind", ["--version"]).error !== undefined)
  throw new Error("valgrind is not installed (Debian: apt-get install valgrind)");

/** Instructions of one phase: the main thread's and the other threads', and how many turns it had. */
interface PhaseCount {
  readonly phase: string;
  readonly turns: number;
  readonly main: number;
  readonly others: number;
}

const figures = new Figures(values.json);
const results = new Map<string, PhaseCount[]>();
for (const build of builds) {
  console.error(`${build.label}: ${build.main} under callgrind…`);
  const counts = await countBuild(
    build.main,
    values.keep === undefined ? undefined : join(values.keep, build.label),
  );
  results.set(build.label, counts);
  for (const count of counts) {
    if (count.turns === 0) {
      console.log(
        `${build.label.padEnd(10)} ${count.phase.padEnd(18)} main ${(count.main / 1e6).toFixed(0)} M, other threads ${(count.others / 1e6).toFixed(0)} M, process ${((count.main + count.others) / 1e6).toFixed(0)} M`,
      );
      continue;
    }
    const perTurn = (value: number) => value / count.turns / 1e6;
    console.log(
      `${build.label.padEnd(10)} ${count.phase.padEnd(18)} main ${perTurn(count.main).toFixed(3)} M a turn, other threads ${perTurn(count.others).toFixed(3)} M, process ${perTurn(count.main + count.others).toFixed(3)} M (${count.turns} turns)`,
    );
  }
}

// Each phase's figures for each build (means over rounds), and how each differs from the first build. The other
// threads' counts move between phases (a full collection or a burst of compilation lands in one or another), so
// the process's figure that compares builds is the one over every measured turn ("all").
const phases = ["one-session", "new-sessions", "concurrent", "all"] as const;
const [first] = builds;
for (const build of builds) {
  const counts = results.get(build.label) ?? [];
  const line: string[] = [];
  for (const phase of phases) {
    const mine = meanPerTurn(counts, phase);
    const theirs = meanPerTurn(results.get(first?.label ?? "") ?? [], phase);
    const change = (a: number, b: number) => (build === first ? "" : ` (${percentChange(a, b)})`);
    line.push(
      `${phase}: main ${mine.main.toFixed(3)}${change(mine.main, theirs.main)}, process ${mine.process.toFixed(3)}${change(mine.process, theirs.process)}`,
    );
    figures.add(`${build.label}-${phase}-main-instructions-per-turn`, mine.main, "M");
    figures.add(`${build.label}-${phase}-process-instructions-per-turn`, mine.process, "M");
  }
  const total = (phase: string) => {
    const found = counts.find((count) => count.phase === phase);
    return found === undefined
      ? { main: Number.NaN, process: Number.NaN }
      : { main: found.main / 1e6, process: (found.main + found.others) / 1e6 };
  };
  const start = total("start");
  const theirStart = (results.get(first?.label ?? "") ?? []).find((count) => count.phase === "start");
  const startChange =
    build === first || theirStart === undefined
      ? ""
      : ` (${percentChange(start.process, (theirStart.main + theirStart.others) / 1e6)})`;
  figures.add(`${build.label}-start-main-instructions`, start.main, "M");
  figures.add(`${build.label}-start-process-instructions`, start.process, "M");
  figures.add(`${build.label}-warm-up-process-instructions`, total("warm-up").process, "M");
  console.log(
    `${build.label.padEnd(10)} M instructions a turn, mean of ${rounds} rounds — ${line.join("; ")}; the start (to /healthz) ${start.process.toFixed(0)} M${startChange}, main ${start.main.toFixed(0)} M`,
  );
}
figures.write();

/** `now` against `before`, signed: "+6.8 %". */
function percentChange(now: number, before: number): string {
  const change = ((now - before) / before) * 100;
  return `${change >= 0 ? "+" : ""}${change.toFixed(1)} %`;
}

/** A phase's instructions a turn (millions), the mean over its rounds; "all": over every measured turn. */
function meanPerTurn(counts: readonly PhaseCount[], phase: string): { main: number; process: number } {
  if (phase === "all") {
    const measured = counts.filter((count) => count.turns > 0 && count.phase !== "warm-up");
    const turnsCounted = measured.reduce((total, count) => total + count.turns, 0);
    const main = measured.reduce((total, count) => total + count.main, 0);
    const others = measured.reduce((total, count) => total + count.others, 0);
    return { main: main / turnsCounted / 1e6, process: (main + others) / turnsCounted / 1e6 };
  }
  const mine = counts.filter((count) => count.phase.startsWith(`${phase}-`));
  const sum = (pick: (count: PhaseCount) => number) =>
    mine.reduce((total, count) => total + pick(count) / count.turns, 0) / mine.length / 1e6;
  return { main: sum((count) => count.main), process: sum((count) => count.main + count.others) };
}

/** Runs one build under callgrind through the phases; returns each phase's counts. */
async function countBuild(main: string, keep: string | undefined): Promise<PhaseCount[]> {
  // Idle connections kept a minute: under callgrind the server is slow enough to reuse one the model is closing.
  const model = await startModelProcess({ keepAliveMs: 60_000 });
  const home = await mkdtemp(join(tmpdir(), "almanac-instructions-"));
  const dumps = keep ?? home;
  if (keep !== undefined) await mkdir(keep, { recursive: true });
  const out = join(dumps, "callgrind");
  const logFile = join(home, "server.log");
  const log = openSync(logFile, "a");
  // --smc-check: V8 writes and rewrites the code it runs; --separate-threads: one count per thread.
  const server = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      "--smc-check=all-non-file",
      "--separate-threads=yes",
      `--callgrind-out-file=${out}`,
      values.node,
      "--enable-source-maps",
      main,
      "start",
    ],
    {
      env: {
        PATH: process.env.PATH ?? "",
        ALMANAC_HOME: join(home, "data"),
        ALMANAC_PORT: "0",
        ALMANAC_ADMIN_TOKEN: token,
        ALMANAC_LOG_LEVEL: "info",
        ALMANAC_MODEL_BASE_URL: model.baseURL.replace(/\/$/, ""),
        ALMANAC_MODEL_NAME: "scripted-model",
        ALMANAC_MODEL_MAX_RETRIES: "0",
        // Everything runs ~20× slower under callgrind.
        ALMANAC_MODEL_TIMEOUT_MS: "600000",
        ALMANAC_TURN_TIMEOUT_MS: "600000",
        ALMANAC_MAX_CONCURRENT_TURNS: "100",
        ALMANAC_SESSION_QUEUE_LIMIT: "100",
        ALMANAC_SESSION_IDLE_UNLOAD_MS: "3600000",
      },
      stdio: ["ignore", log, log],
    },
  );
  closeSync(log);
  killOnExit(server);
  const agent = new Agent({ keepAlive: true, maxSockets: 200 });
  try {
    const base = await serverURL(server, logFile);
    const turn = (user: string, content: string) => chatTurn(agent, base, user, content);
    // The start: from the process's first instruction to /healthz answering (no turn).
    execFileSync("callgrind_control", ["--dump=start", String(server.pid)], { stdio: "ignore" });
    const counted: { phase: string; turns: number }[] = [{ phase: "start", turns: 0 }];
    const phase = async (name: string, count: number, run: () => Promise<void>) => {
      await run();
      // Let the turns' trailing work (statistics, fsyncs) finish inside the phase.
      await new Promise((done) => setTimeout(done, 1500));
      execFileSync("callgrind_control", [`--dump=${name}`, String(server.pid)], { stdio: "ignore" });
      counted.push({ phase: name, turns: count });
    };
    // Warm-up: the paths every phase takes, compiled before any is counted.
    await phase("warm-up", 120, async () => {
      for (let index = 0; index < 40; index += 1) await turn(`warm-up-${index % 4}`, `warm-up ${index}`);
      for (let index = 0; index < 20; index += 1) await turn(`warm-up-new-${index}`, "hello");
      await Promise.all(
        Array.from({ length: 20 }, async (_, session) => {
          for (let index = 0; index < 3; index += 1) await turn(`warm-up-at-once-${session}`, `m ${index}`);
        }),
      );
    });
    for (let round = 1; round <= rounds; round += 1) {
      await phase(`one-session-${round}`, turns, async () => {
        for (let index = 0; index < turns; index += 1) await turn("one-session", `message ${round} ${index}`);
      });
      await phase(`new-sessions-${round}`, turns, async () => {
        for (let index = 0; index < turns; index += 1) await turn(`new-${round}-${index}`, "hello");
      });
      await phase(`concurrent-${round}`, CONCURRENT_SESSIONS * CONCURRENT_TURNS, async () => {
        await Promise.all(
          Array.from({ length: CONCURRENT_SESSIONS }, async (_, session) => {
            for (let index = 0; index < CONCURRENT_TURNS; index += 1)
              await turn(`at-once-${round}-${session}`, `message ${index}`);
          }),
        );
      });
    }
    server.kill("SIGTERM");
    await new Promise((done) => server.once("exit", done));
    return await readCounts(dumps, counted);
  } catch (error) {
    const output = readFileSync(logFile, "utf8").split("\n").slice(-20).join("\n");
    throw new Error(`${main} under callgrind: ${String(error)}\nthe server's last log lines:\n${output}`, {
      cause: error,
    });
  } finally {
    agent.destroy();
    if (server.exitCode === null) server.kill("SIGKILL");
    await model.close();
    await rm(home, { recursive: true, force: true });
  }
}

/** The server's URL once it logged it and `/healthz` answers. */
async function serverURL(server: ChildProcess, logFile: string): Promise<string> {
  for (;;) {
    const output = readFileSync(logFile, "utf8");
    if (server.exitCode !== null) throw new Error(`server exited:\n${output.slice(0, 5000)}`);
    const found = /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
    if (found !== undefined && (await fetch(`${found}/healthz`).catch(() => undefined))?.ok) return found;
    await new Promise((done) => setTimeout(done, 200));
  }
}

function chatTurn(agent: Agent, base: string, user: string, content: string): Promise<void> {
  return new Promise((done, fail) => {
    const body = JSON.stringify({ model: "almanac", user, messages: [{ role: "user", content }] });
    const call = request(
      `${base}/v1/chat/completions`,
      {
        method: "POST",
        agent,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      },
      (response) => {
        let text = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          text += chunk;
        });
        response.on("end", () =>
          response.statusCode === 200
            ? done()
            : fail(new Error(`turn failed: ${response.statusCode} ${text}`)),
        );
      },
    );
    call.on("error", fail);
    call.end(body);
  });
}

/**
 * Reads callgrind's dumps: one file a dump and thread (`<out>.<part>-<thread>`), each with its trigger
 * (`desc: Trigger: dump <phase>`) and its total (`summary:` or `totals:`); thread 1 is the main thread.
 */
async function readCounts(
  directory: string,
  counted: readonly { phase: string; turns: number }[],
): Promise<PhaseCount[]> {
  const byPhase = new Map<string, { main: number; others: number }>();
  for (const name of await readdir(directory)) {
    if (!name.startsWith("callgrind")) continue;
    const text = await readFile(join(directory, name), "utf8");
    const trigger = /^desc: Trigger: dump (.+)$/m.exec(text)?.[1];
    if (trigger === undefined) continue;
    const thread = Number(/^thread: (\d+)$/m.exec(text)?.[1] ?? "1");
    const total = Number(/^(?:summary|totals): (\d+)/m.exec(text)?.[1] ?? "0");
    const entry = byPhase.get(trigger) ?? { main: 0, others: 0 };
    if (thread === 1) entry.main += total;
    else entry.others += total;
    byPhase.set(trigger, entry);
  }
  return counted.map(({ phase, turns: count }) => {
    const entry = byPhase.get(phase);
    if (entry === undefined) throw new Error(`callgrind wrote no dump for ${phase}`);
    return { phase, turns: count, ...entry };
  });
}
