/**
 * The built server as a user runs it, measured from outside (not part of the test run): `almanac start` from
 * `apps/server/dist/` in its own process (bench/almanac-process.ts) over a synthetic year of memory
 * (bench/year-corpus.ts), the scripted model in a second process (bench/model-process.ts), this bench as the
 * client over keep-alive HTTP in a third. In order:
 *  1. start → the first `/healthz` 200; RSS after `--idle-seconds` idle; memory search over HTTP;
 *  2. one session's 300 sequential turns (after `--sequential-warm-up` turns in other sessions): latency, what the
 *     server added beyond the model's own time, and the server's CPU a turn, by thread;
 *  3. 100 new sessions, one turn each, one after another;
 *  4. `--sessions` loaded idle sessions: RSS 2 s after, and after `--idle-seconds` more;
 *  5. `--concurrent-rounds` rounds of 100 new sessions × 10 turns at once, each round taken apart.
 * Figures that /proc gives (RSS, CPU, threads, connections) need Linux. Build first: `pnpm build:server`.
 *
 * Run: node --import tsx bench/server-process.ts [--runner dist|bin|source] [--main <dist/main.js>]
 *      [--idle-seconds 30] [--sessions 1000] [--memory year|empty] [--quick] [--restart]
 *      [--sequential-warm-up 20] [--warm-up-session-turns 300] [--concurrent-rounds 3] [--round-gap-seconds 0]
 *      [--max-concurrent-turns 100] [--model-keep-alive-ms <ms>] [--model-host <name>]
 *      ["--node-flags=<flags for the server's node>"] [--dump-concurrent <file>] [--json <file>]
 * BENCH_KEEP_LOG=1 keeps the server's log; UV_THREADPOOL_SIZE is passed through to the server.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver, performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { cpuMs, startAlmanac } from "./almanac-process.js";
import { Figures, jsonOption } from "./figures.js";
import { httpCall, type ServerTimings, serverTimings } from "./http-call.js";
import { startModelProcess } from "./model-process.js";
import { percentile } from "./sample-stats.js";
import { writeYearCorpus, yearQueries } from "./year-corpus.js";

const { values } = parseArgs({
  options: {
    runner: { type: "string", default: "dist" },
    main: { type: "string" },
    "node-flags": { type: "string", default: "" },
    "idle-seconds": { type: "string", default: "30" },
    sessions: { type: "string", default: "1000" },
    memory: { type: "string", default: "year" },
    quick: { type: "boolean", default: false },
    restart: { type: "boolean", default: false },
    "dump-concurrent": { type: "string" },
    "max-concurrent-turns": { type: "string", default: "100" },
    "concurrent-rounds": { type: "string", default: "3" },
    "round-gap-seconds": { type: "string", default: "0" },
    "sequential-warm-up": { type: "string", default: "20" },
    "warm-up-session-turns": { type: "string", default: "300" },
    "model-keep-alive-ms": { type: "string" },
    "model-host": { type: "string" },
    ...jsonOption,
  },
});

/**
 * The client's keep-alive connections. `node:http` rather than the global `fetch`: with 100 requests in flight,
 * undici's fetch in this process cost enough CPU on the 2-core machine to delay the answers it measures.
 */
const clientAgent = new Agent({ keepAlive: true });
const figures = new Figures(values.json);

await main();

async function main(): Promise<void> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const runners: Record<string, readonly string[]> = {
    dist: ["--enable-source-maps", values.main ?? join(root, "apps/server/dist/main.js")],
    bin: [join(root, "apps/server/bin/almanac.js")],
    source: ["--import", "tsx", join(root, "apps/server/src/main.ts")],
  };
  const chosen = runners[values.runner];
  const flags = values["node-flags"].split(" ").filter(Boolean);
  const runnerArgs = chosen === undefined ? undefined : [...flags, ...chosen];
  if (runnerArgs === undefined) throw new Error(`--runner must be one of ${Object.keys(runners).join(", ")}`);
  const idleSeconds = Number(values["idle-seconds"]);
  const idleSessions = Number(values.sessions);
  const token = "bench-admin-token-0123456789";

  const modelKeepAlive = values["model-keep-alive-ms"];
  const model = await startModelProcess(
    modelKeepAlive === undefined ? {} : { keepAliveMs: Number(modelKeepAlive) },
  );
  const { pid: modelPid } = model;
  // `--model-host localhost`: the server names the model by a host name, as a deployment does, so each new
  // connection to it starts with a DNS lookup (the scripted model listens on 127.0.0.1).
  const modelAddress = new URL(model.baseURL);
  if (values["model-host"] !== undefined) modelAddress.hostname = values["model-host"];
  const modelURL = modelAddress.href.replace(/\/$/, "");

  const home = await mkdtemp(join(tmpdir(), "almanac-process-bench-"));
  if (values.memory === "year") await writeYearCorpus(join(home, "workspace"));
  const env = {
    PATH: process.env.PATH ?? "",
    ALMANAC_HOME: home,
    ALMANAC_PORT: "0",
    ALMANAC_ADMIN_TOKEN: token,
    ALMANAC_LOG_LEVEL: "info",
    ALMANAC_MODEL_BASE_URL: modelURL,
    ALMANAC_MODEL_NAME: "scripted-model",
    ALMANAC_MODEL_MAX_RETRIES: "0",
    ALMANAC_MAX_CONCURRENT_TURNS: values["max-concurrent-turns"],
    ALMANAC_SESSION_QUEUE_LIMIT: "100",
    ALMANAC_SESSION_IDLE_UNLOAD_MS: "3600000",
    // Passed through for experiments with libuv's thread pool (file system calls, fsync, DNS).
    ...(process.env.UV_THREADPOOL_SIZE === undefined
      ? {}
      : { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE }),
  };
  let server = await startAlmanac(runnerArgs, env);
  if (values.restart) {
    // The index is built now: what a restart after an upgrade or a crash finds.
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    await server.stop();
    server = await startAlmanac(runnerArgs, env);
  }
  const { base, pid: serverPid, startMs } = server;
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

  /** A turn's latency and its `Server-Timing` durations (ms): its waits on the model, and the whole request's. */
  const timedTurn = async (
    user: string,
    content: string,
  ): Promise<{ latency: number; timing: ServerTimings }> => {
    const begin = performance.now();
    const body = JSON.stringify({ model: "almanac", user, messages: [{ role: "user", content }] });
    const response = await call("POST", `${base}/v1/chat/completions`, headers, body);
    if (response.status !== 200) throw new Error(`turn failed: ${response.status} ${response.text}`);
    JSON.parse(response.text);
    const latency = performance.now() - begin;
    return { latency, timing: serverTimings(response.serverTiming) };
  };
  const turn = async (user: string, content: string): Promise<number> =>
    (await timedTurn(user, content)).latency;
  const search = async (query: string): Promise<number> => {
    const begin = performance.now();
    const response = await call("GET", `${base}/api/memory/search?q=${encodeURIComponent(query)}`, headers);
    if (response.status !== 200) throw new Error(`search failed: ${response.status} ${response.text}`);
    JSON.parse(response.text);
    return performance.now() - begin;
  };

  const report: string[] = [];
  const note = (line: string) => {
    report.push(line);
    console.error(line);
  };
  note(`server start → /healthz 200: ${startMs.toFixed(0)} ms (runner ${values.runner})`);
  figures.add("start-to-healthz", startMs, "ms", { below: 1000 });

  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  note(
    `RSS after start + ${idleSeconds} s idle: ${memory(serverPid)}; server CPU so far ${cpuMs(serverPid)} ms`,
  );
  figures.add("idle-rss", rss(serverPid) / 1024, "MB", { below: 120 });

  await turn("first", "hello");
  await new Promise((resolve) => setTimeout(resolve, 1000));
  note(`RSS after one turn: ${memory(serverPid)}`);
  figures.add("rss-after-one-turn", rss(serverPid) / 1024, "MB");

  for (const query of yearQueries) await search(query); // warm-up
  const searches: number[] = [];
  for (let round = 0; round < 50; round += 1)
    for (const query of yearQueries) searches.push(await search(query));
  note(`memory search over HTTP (${yearQueries.length} queries × 50, sequential): ${format(searches)}`);
  figures.add("search-http-p50", percentile(searches, 50), "ms", { below: 1.5 });
  figures.add("search-http-p95", percentile(searches, 95), "ms");
  note(`RSS after the searches: ${memory(serverPid)}`);

  if (!values.quick) await sequentialTurns();
  if (!values.quick) await newSessionTurns();
  if (!values.quick) await loadSessions();
  note(
    `node ${process.version}, load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(" ")}`,
  );

  await server.stop();
  clientAgent.destroy();
  await model.close();
  await rm(home, { recursive: true, force: true });
  console.log(report.join("\n"));
  figures.write();

  /**
   * One session, 300 turns one after another: latency beside the model's own (the same kind of request sent to it
   * directly), and the server's CPU per turn (/proc), which the machine's other load disturbs least.
   */
  async function sequentialTurns(): Promise<void> {
    const direct = async (): Promise<number> => {
      const begin = performance.now();
      const response = await call(
        "POST",
        `${modelURL}/chat/completions`,
        { authorization: "Bearer x", "content-type": "application/json" },
        JSON.stringify({ model: "scripted-model", messages: [{ role: "user", content: "hello" }] }),
      );
      JSON.parse(response.text);
      return performance.now() - begin;
    };
    // Warm-up turns in other sessions, so the measured one starts with an empty history either way: a new session
    // every `--warm-up-session-turns` turns (default 300, the measured session's own length, so the warm-up has
    // seen every history length the measured turns reach). With 20 warm-up turns that is one session, as before.
    // After a long warm-up in one session, V8's code was specialized to that session's closures and objects: the
    // measured session's first turn threw ~20 optimized functions away ("wrong call target", "wrong map";
    // `--trace-deopt`), compiled again during the measured turns. A warm-up in sessions of 10 turns still left 16
    // deoptimizations in them, on paths a short history never takes (a snapshot over 64 KB, the checkpoints).
    const warmUp = Number(values["sequential-warm-up"]);
    const turnsPerSession = Number(values["warm-up-session-turns"]);
    for (let index = 0; index < warmUp; index += 1)
      await turn(`sequential-warm-up-${Math.floor(index / turnsPerSession)}`, `warm-up ${index}`);
    const alone: number[] = [];
    for (let index = 0; index < 300; index += 1) alone.push(await direct());
    const cpuBefore = cpuMs(serverPid);
    const systemBefore = cpuMs(serverPid, "system");
    const threadsBefore = threadCpuMs(serverPid);
    const from = process.hrtime.bigint() / 1000n;
    const turns: number[] = [];
    const timings: ServerTimings[] = [];
    // CPU per block of 50 turns: a cost that grows with the history shows as a rising row.
    const blocks: string[] = [];
    let blockStart = cpuBefore;
    // What the server added to each turn, three ways: this client's latency minus the time the model itself took
    // over the turn's requests (its own clock; the server's work and both HTTP hops are in), minus the model waits
    // the server reports in `Server-Timing` (which count the server's building and reading of its model requests
    // as model time), and inside the server (`Server-Timing` total minus model).
    await model.chatTimings();
    await model.pauses();
    // This client's own collections: a pause here when an answer arrives counts as time outside the server.
    const clientCollections: { at: number; ms: number }[] = [];
    const clientPauses = new PerformanceObserver((list) => {
      for (const entry of list.getEntries())
        clientCollections.push({ at: performance.timeOrigin + entry.startTime, ms: entry.duration });
    });
    clientPauses.observe({ entryTypes: ["gc"] });
    /** Each measured turn's span, in ms since the epoch (the clock of the model's pauses). */
    const spans: { from: number; to: number }[] = [];
    // Each turn's run and run-queue time of every thread of the three processes (/proc schedstat): on 2 cores, a
    // ready main thread can wait for a core while another process, or a background thread (V8's compiler and
    // collector, libuv's pool), runs.
    const processes = { server: serverPid, model: modelPid, client: process.pid };
    const schedules: Map<string, ThreadSchedule>[] = [];
    for (let index = 0; index < 300; index += 1) {
      const before = threadSchedules(processes);
      const from = performance.timeOrigin + performance.now();
      const { latency, timing } = await timedTurn("sequential", `message ${index}`);
      spans.push({ from, to: performance.timeOrigin + performance.now() });
      schedules.push(scheduleSince(before, threadSchedules(processes)));
      turns.push(latency);
      timings.push(timing);
      if ((index + 1) % 50 === 0) {
        const now = cpuMs(serverPid);
        blocks.push(((now - blockStart) / 50).toFixed(2));
        blockStart = now;
      }
    }
    clientPauses.disconnect();
    const beyondModelWait = turns.map((latency, index) => latency - (timings[index]?.model ?? Number.NaN));
    const insideServer = timings.map(({ model, total }) => total - model);
    const modelPauses = await model.pauses();
    /** The collections of `pauses` during a turn, in ms. */
    const pausedDuring = (pauses: readonly { at: number; ms: number }[], index: number): number => {
      const span = spans[index];
      if (span === undefined) return Number.NaN;
      return pauses
        .filter((pause) => pause.at < span.to && pause.at + pause.ms > span.from)
        .reduce(
          (sum, pause) => sum + Math.min(pause.at + pause.ms, span.to) - Math.max(pause.at, span.from),
          0,
        );
    };
    const modelOwn = new Map<string, number>();
    const requestBytes = new Map<string, number>();
    for (const { lastUserText, ms, bytes } of await model.chatTimings()) {
      modelOwn.set(lastUserText, (modelOwn.get(lastUserText) ?? 0) + ms);
      requestBytes.set(lastUserText, bytes);
    }
    const beyondModel = turns.map(
      (latency, index) => latency - (modelOwn.get(`message ${index}`) ?? Number.NaN),
    );
    const cpuPerTurn = (cpuMs(serverPid) - cpuBefore) / turns.length;
    const systemPerTurn = (cpuMs(serverPid, "system") - systemBefore) / turns.length;
    const byThread = threadCpuPerTurn(serverPid, threadsBefore, turns.length);
    note(
      `1 session, 300 sequential turns: ${format(turns)}; the model alone ${format(alone)}; the model's own time over a turn's requests ${format([...modelOwn.values()])}; what the server added: beyond the model's own time ${format(beyondModel)}, beyond the model waits in Server-Timing ${format(beyondModelWait)}, inside the server (Server-Timing) ${format(insideServer)}; server CPU ${cpuPerTurn.toFixed(2)} ms a turn, of it system ${systemPerTurn.toFixed(2)} ms (by 50 turns: ${blocks.join(", ")}; by thread: ${byThread}) (monotonic µs ${from}–${process.hrtime.bigint() / 1000n})`,
    );
    const mainThreads = (label: string, field: keyof ThreadSchedule) =>
      schedules.map((schedule) => schedule.get(`${label} main`)?.[field] ?? Number.NaN);
    /** Per turn, the run time of a process's threads other than its main thread (its V8 and libuv helpers). */
    const otherThreads = (label: string) =>
      schedules.map((schedule) =>
        [...schedule]
          .filter(([name]) => name.startsWith(`${label} `) && name !== `${label} main`)
          .reduce((sum, [, { ranMs }]) => sum + ranMs, 0),
      );
    // The tail, taken apart: the server's own work (Server-Timing total minus its model waits), its model waits
    // beyond the model's own clock (building, sending and reading the requests, the hop, and any pause of the
    // model's process before its clock starts), and what lies outside the server's clock (the client, the hop).
    const worst = beyondModel
      .map((beyond, index) => ({ beyond, index }))
      .sort((a, b) => b.beyond - a.beyond)
      .slice(0, 6)
      .map(({ beyond, index }) => {
        const own = modelOwn.get(`message ${index}`) ?? Number.NaN;
        const latency = turns[index] ?? Number.NaN;
        const timing = timings[index] ?? { model: Number.NaN, total: Number.NaN };
        const schedule = schedules[index] ?? new Map<string, ThreadSchedule>();
        const main = (label: string) =>
          schedule.get(`${label} main`) ?? { ranMs: Number.NaN, waitedMs: Number.NaN };
        const runners = [...schedule]
          .filter(([, { ranMs }]) => ranMs >= 0.05)
          .sort((a, b) => b[1].ranMs - a[1].ranMs)
          .slice(0, 6)
          .map(([label, { ranMs }]) => `${label} ${ranMs.toFixed(2)}`)
          .join(", ");
        return `#${index} (model request ${requestBytes.get(`message ${index}`)} bytes) ${beyond.toFixed(2)} = server ${(timing.total - timing.model).toFixed(2)} + model waits beyond its clock ${(timing.model - own).toFixed(2)} (the model collecting garbage meanwhile: ${pausedDuring(modelPauses, index).toFixed(2)}) + outside ${(latency - timing.total).toFixed(2)} (this client collecting garbage meanwhile: ${pausedDuring(clientCollections, index).toFixed(2)}); main threads ran / waited for a core: server ${main("server").ranMs.toFixed(2)} / ${main("server").waitedMs.toFixed(2)}, model ${main("model").ranMs.toFixed(2)} / ${main("model").waitedMs.toFixed(2)}; the threads that ran most meanwhile: ${runners}`;
      });
    note(`  the 6 turns that added most (ms): ${worst.join("; ")}`);
    figures.add("sequential-latency-p50", percentile(turns, 50), "ms");
    figures.add("sequential-latency-p99", percentile(turns, 99), "ms");
    figures.add("sequential-beyond-model-p50", percentile(beyondModel, 50), "ms", { below: 3 });
    figures.add("sequential-beyond-model-p99", percentile(beyondModel, 99), "ms", { below: 6 });
    figures.add("sequential-inside-server-p50", percentile(insideServer, 50), "ms");
    figures.add("sequential-inside-server-p99", percentile(insideServer, 99), "ms");
    figures.add("sequential-server-cpu-per-turn", cpuPerTurn, "ms");
    note(
      `  the main threads' waits for a core, per turn: server ${format(mainThreads("server", "waitedMs"))}, model ${format(mainThreads("model", "waitedMs"))}; their run time per turn: server ${format(mainThreads("server", "ranMs"))}, model ${format(mainThreads("model", "ranMs"))}; the other threads' run time per turn: server ${format(otherThreads("server"))}, model ${format(otherThreads("model"))}, this client ${format(otherThreads("client"))}`,
    );
    const longPauses = modelPauses.filter((pause) => pause.ms >= 1);
    note(
      `  the model's collections over the 300 turns: ${modelPauses.length}, ${longPauses.length} of 1 ms or more (${longPauses.map((pause) => `${pause.kind} ${pause.ms.toFixed(1)}`).join(", ")})`,
    );
  }

  /**
   * 100 new sessions, one after another, each with one turn: what a session's first turn costs the server on
   * top of a loaded session's (the sequential turns), without the contention of the 100 × 10's first round.
   */
  async function newSessionTurns(): Promise<void> {
    for (let index = 0; index < 10; index += 1) await turn(`new-warm-${index}`, "hello");
    const cpuBefore = cpuMs(serverPid);
    const threadsBefore = threadCpuMs(serverPid);
    const from = process.hrtime.bigint() / 1000n;
    const turns: number[] = [];
    for (let index = 0; index < 100; index += 1) turns.push(await turn(`new-${index}`, "hello"));
    const cpuPerTurn = (cpuMs(serverPid) - cpuBefore) / turns.length;
    note(
      `100 new sessions, one turn each, one after another: ${format(turns)}; server CPU ${cpuPerTurn.toFixed(2)} ms a turn (by thread: ${threadCpuPerTurn(serverPid, threadsBefore, turns.length)}) (monotonic µs ${from}–${process.hrtime.bigint() / 1000n})`,
    );
    figures.add("new-session-turn-p50", percentile(turns, 50), "ms");
    figures.add("new-session-server-cpu-per-turn", cpuPerTurn, "ms");
  }

  async function loadSessions(): Promise<void> {
    const rssBefore = rss(serverPid);
    for (let batch = 0; batch < idleSessions; batch += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, idleSessions - batch) }, (_, index) =>
          turn(`idle-${batch + index}`, "hello, remember me"),
        ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const rssAfter = rss(serverPid);
    note(
      `RSS with ${idleSessions} loaded idle sessions, 2 s after: ${memory(serverPid)} (+${((rssAfter - rssBefore) / idleSessions).toFixed(1)} KiB a session)`,
    );
    figures.add("loaded-sessions-rss", rssAfter / 1024, "MB");
    // V8 shrinks an idle heap on its own after a while (its memory reducer): what a quiet server holds. The
    // CPU it spends meanwhile is what an idle server costs (timers, sweeps, V8's collections).
    const idleCpuBefore = cpuMs(serverPid);
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
    note(
      `  the same after ${idleSeconds} s more idle: ${memory(serverPid)} (+${((rss(serverPid) - rssBefore) / idleSessions).toFixed(1)} KiB a session); server CPU in those ${idleSeconds} s: ${cpuMs(serverPid) - idleCpuBefore} ms`,
    );
    // The target is for 1,000 sessions; another count is an experiment.
    figures.add(
      "loaded-sessions-rss-after-idle",
      rss(serverPid) / 1024,
      "MB",
      idleSessions === 1000 ? { below: 200 } : undefined,
    );

    const rounds = Number(values["concurrent-rounds"]);
    const timeline: {
      round: number;
      session: number;
      index: number;
      startMs: number;
      latencyMs: number;
      timing: ServerTimings;
    }[] = [];
    const warm: number[] = [];
    let warmCpu = 0;
    for (let round = 1; round <= rounds; round += 1) {
      // A pause before the later rounds as well: whether round 1's cost follows the idle time before it.
      if (round > 1)
        await new Promise((resolve) => setTimeout(resolve, Number(values["round-gap-seconds"]) * 1000));
      note(
        `  before round ${round}: ${openConnections(new URL(modelURL).port)} open connections to the model, ${openConnections(new URL(base).port)} to the server`,
      );
      const concurrent: number[] = [];
      const firstTurns: number[] = [];
      const laterTurns: number[] = [];
      // Where a turn's time went: waiting on the model (Server-Timing), in the server beside that, and outside
      // the server's own clock (the client, both hops, and the wait before the server reads the request).
      const firstParts = { model: [] as number[], inside: [] as number[], outside: [] as number[] };
      const laterParts = { model: [] as number[], inside: [] as number[], outside: [] as number[] };
      const parts = (of: typeof firstParts) =>
        `model wait ${format(of.model)}, inside the server ${format(of.inside)}, outside it ${format(of.outside)}`;
      // The monotonic clock (µs) is the one a `--cpu-prof` of the server stamps its samples with:
      // `npx tsx bench/cpu-profile.ts <file> --from <µs> --to <µs>` reads only this round.
      const concurrentFrom = process.hrtime.bigint() / 1000n;
      const phaseStart = performance.now();
      const serverCpuBefore = cpuMs(serverPid);
      const modelCpuBefore = cpuMs(modelPid);
      const clientCpuBefore = process.cpuUsage();
      const threadsBefore = threadCpuMs(serverPid);
      await Promise.all(
        Array.from({ length: 100 }, async (_, session) => {
          for (let index = 0; index < 10; index += 1) {
            const started = performance.now();
            const { latency, timing } = await timedTurn(`c${round}-${session}`, `message ${index}`);
            timeline.push({
              round,
              session,
              index,
              startMs: started - phaseStart,
              latencyMs: latency,
              timing,
            });
            concurrent.push(latency);
            (index === 0 ? firstTurns : laterTurns).push(latency);
            const parts = index === 0 ? firstParts : laterParts;
            parts.model.push(timing.model);
            parts.inside.push(timing.total - timing.model);
            parts.outside.push(latency - timing.total);
          }
        }),
      );
      const serverCpu = cpuMs(serverPid) - serverCpuBefore;
      const clientCpu = process.cpuUsage(clientCpuBefore);
      if (round > 1) {
        warm.push(...concurrent);
        warmCpu += serverCpu;
      }
      // The scripted model shares the 2 cores: its CPU (parsing, checking and counting each request) is beside
      // ours.
      note(
        `100 concurrent sessions × 10 turns, round ${round}: ${format(concurrent)}; CPU in this phase: server ${serverCpu} ms (a turn by thread: ${threadCpuPerTurn(serverPid, threadsBefore, concurrent.length)}), scripted model ${cpuMs(modelPid) - modelCpuBefore} ms, this client ${Math.round((clientCpu.user + clientCpu.system) / 1000)} ms (monotonic µs ${concurrentFrom}–${process.hrtime.bigint() / 1000n})`,
      );
      note(
        `  of them each session's first turn (a new session): ${format(firstTurns)}; the later ones: ${format(laterTurns)}`,
      );
      note(`    first turns: ${parts(firstParts)}`);
      note(`    later turns: ${parts(laterParts)}`);
      figures.add(`concurrent-round-${round}-p99`, percentile(concurrent, 99), "ms", { below: 250 });
      figures.add(`concurrent-round-${round}-first-turns-p99`, percentile(firstTurns, 99), "ms");
      figures.add(`concurrent-round-${round}-later-turns-p99`, percentile(laterTurns, 99), "ms");
      figures.add(`concurrent-round-${round}-server-cpu-per-turn`, serverCpu / concurrent.length, "ms");
    }
    if (warm.length > 0) {
      note(
        `100 × 10 after the first round (rounds 2–${rounds}, V8 done optimizing the turn path): ${format(warm)}; server CPU ${(warmCpu / warm.length).toFixed(2)} ms a turn`,
      );
      figures.add("concurrent-later-rounds-p99", percentile(warm, 99), "ms", { below: 250 });
      figures.add("concurrent-later-rounds-server-cpu-per-turn", warmCpu / warm.length, "ms");
    }
    if (values["dump-concurrent"] !== undefined)
      writeFileSync(
        values["dump-concurrent"],
        `${timeline.map((entry) => JSON.stringify(entry)).join("\n")}\n`,
      );
    note(`RSS at the end: ${memory(serverPid)}; server CPU ${cpuMs(serverPid)} ms`);
  }
}

/** One HTTP request over {@link clientAgent}. */
function call(method: string, url: string, headers: Record<string, string>, body?: string) {
  return httpCall(clientAgent, method, url, headers, body);
}

/** A field of /proc/<pid>/status in KiB (Linux), NaN elsewhere. */
function statusKiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const file = `/proc/${pid}/status`;
  if (!existsSync(file)) return Number.NaN;
  return Number(
    new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(file, "utf8"))?.[1] ?? Number.NaN,
  );
}

function rss(pid: number): number {
  return statusKiB(pid, "VmRSS");
}

function memory(pid: number): string {
  return `${(rss(pid) / 1024).toFixed(1)} MB (peak ${(statusKiB(pid, "VmHWM") / 1024).toFixed(1)} MB)`;
}

/** The CPU each of `pid`'s threads spent since `before`, per turn: the six busiest, as "name ms, …". */
function threadCpuPerTurn(pid: number, before: Map<string, number>, turns: number): string {
  return [...threadCpuMs(pid)]
    .map(([name, ms]) => [name, (ms - (before.get(name) ?? 0)) / turns] as const)
    .filter(([, perTurn]) => perTurn > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([name, perTurn]) => `${name} ${perTurn.toFixed(2)}`)
    .join(", ");
}

/**
 * CPU time (ms) of each thread of `pid` (Linux; empty elsewhere), labelled "main" or by name and thread id
 * (libuv's pool, V8's compiler and GC helpers).
 */
function threadCpuMs(pid: number): Map<string, number> {
  return new Map(
    [...threadSchedules({ process: pid })].map(([label, { ranMs }]) => [
      label.slice("process ".length),
      ranMs,
    ]),
  );
}

interface ThreadSchedule {
  /** CPU time the thread ran, ms. */
  readonly ranMs: number;
  /** Time it was ready to run but waited in the kernel's run queue for a core, ms. */
  readonly waitedMs: number;
}

/**
 * Every thread of each process, labelled "<process> main" or "<process> <name>/<thread id>" (Node 20 names its
 * helper threads "node"; Node 24 "V8Worker", "libuv-worker"…): its run and run-queue time so far
 * (/proc/<pid>/task/<tid>/schedstat, Linux; empty elsewhere).
 */
function threadSchedules(processes: Record<string, number>): Map<string, ThreadSchedule> {
  const schedules = new Map<string, ThreadSchedule>();
  for (const [label, pid] of Object.entries(processes)) {
    const dir = `/proc/${pid}/task`;
    if (!existsSync(dir)) continue;
    for (const task of readdirSync(dir)) {
      try {
        const [ran, waited] = readFileSync(`${dir}/${task}/schedstat`, "utf8").split(" ");
        const name =
          task === String(pid) ? "main" : `${readFileSync(`${dir}/${task}/comm`, "utf8").trim()}/${task}`;
        schedules.set(`${label} ${name}`, { ranMs: Number(ran) / 1e6, waitedMs: Number(waited) / 1e6 });
      } catch {
        // The thread ended between the listing and the read.
      }
    }
  }
  return schedules;
}

/** What each thread ran and waited between two readings of {@link threadSchedules}. */
function scheduleSince(
  before: Map<string, ThreadSchedule>,
  after: Map<string, ThreadSchedule>,
): Map<string, ThreadSchedule> {
  const since = new Map<string, ThreadSchedule>();
  for (const [name, { ranMs, waitedMs }] of after) {
    const earlier = before.get(name) ?? { ranMs: 0, waitedMs: 0 };
    since.set(name, { ranMs: ranMs - earlier.ranMs, waitedMs: waitedMs - earlier.waitedMs });
  }
  return since;
}

/** Established TCP connections to `port` on this machine, counted at the connecting end (/proc/net/tcp). */
function openConnections(port: string): number {
  const hexPort = Number(port).toString(16).toUpperCase().padStart(4, "0");
  let count = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      // sl local_address rem_address st …: the remote address's port, and 01 for ESTABLISHED.
      const [, , remote, state] = line.trim().split(/\s+/);
      if (state === "01" && remote?.endsWith(`:${hexPort}`)) count += 1;
    }
  }
  return count;
}

function format(values: readonly number[]): string {
  return `p50 ${percentile(values, 50).toFixed(2)} ms, p95 ${percentile(values, 95).toFixed(2)} ms, p99 ${percentile(values, 99).toFixed(2)} ms (n=${values.length})`;
}
