/**
 * Server overhead per turn with a scripted model that answers instantly, at 1 and at 100 concurrent
 * sessions, and resident memory per loaded idle session.
 * Run: node --expose-gc --import tsx bench/server.ts [--quick] [--warm-up 50] [--model-process] [--json <file>]
 * (not part of the test run). `--model-process` runs the scripted model in its own process
 * (bench/model-process.ts), so its garbage does not pace the scavenges the server's turns wait for.
 * `--quick` runs only the sequential single-session part (for profiling with `--cpu-prof` or counting
 * fsyncs with `strace -f -c -e trace=fsync,fdatasync`). BENCH_DUMP_TURNS=1 prints each sequential turn's
 * overhead as JSON. `--json <file>` writes the figures (bench/figures.ts).
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { Figures, jsonOption } from "./figures.js";
import { serverTimings } from "./http-call.js";
import { BENCH_TOKEN, startInProcessServer } from "./in-process-server.js";
import { startModelProcess } from "./model-process.js";
import { percentile } from "./sample-stats.js";

const format = (values: number[]) =>
  `p50 ${percentile(values, 50).toFixed(2)} ms  p99 ${percentile(values, 99).toFixed(2)} ms  (n=${values.length})`;

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "warm-up": { type: "string", default: "50" },
    "model-process": { type: "boolean", default: false },
    ...jsonOption,
  },
});

const modelProcess = values["model-process"] ? await startModelProcess({ keepBodies: true }) : undefined;
const server = await startInProcessServer("warn", modelProcess?.baseURL);
const { llm } = server;
const modelBaseURL = llm?.baseURL ?? modelProcess?.baseURL;
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: BENCH_TOKEN, maxRetries: 0 });
const modelClient = new OpenAI({ baseURL: modelBaseURL, apiKey: "x", maxRetries: 0 });
/** The bodies of the chat requests the model got since the last call. */
let requestsSeen = 0;
async function modelRequestBodies(): Promise<unknown[]> {
  if (modelProcess !== undefined) return modelProcess.chatBodies();
  const requests = llm?.requests ?? [];
  const bodies = requests
    .slice(requestsSeen)
    .filter((request) => request.path === "/v1/chat/completions")
    .map((request) => request.body);
  requestsSeen = requests.length;
  return bodies;
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}
const turn = (user: string, content: string) =>
  client.chat.completions.create({ model: "almanac", user, messages: [{ role: "user", content }] });

// Warm-up. V8 goes on optimizing the turn path for ~2,000 turns (--trace-opt): `--warm-up 2000` measures the
// server as it runs for months, the default 50 one just started.
const warmUp = Number(values["warm-up"]);
for (let index = 0; index < warmUp; index += 1) await turn("warm", `warm ${index}`);

// The model round trip alone (what a turn spends on the scripted model), to subtract.
const modelOnly: number[] = [];
for (let index = 0; index < 300; index += 1) {
  modelOnly.push(
    await timed(() =>
      modelClient.chat.completions.create({
        model: "scripted-model",
        messages: [{ role: "user", content: "hi" }],
      }),
    ),
  );
}

const single: number[] = [];
/** Each turn's latency minus the model wait its `Server-Timing` header reports. */
const beyondModel: number[] = [];
/** Each turn's `total` minus its `model` in `Server-Timing`: the server's own time, without the client's. */
const insideServer: number[] = [];
await modelRequestBodies();
for (let index = 0; index < 300; index += 1) {
  const start = performance.now();
  const { response } = await turn("single", `message ${index}`).withResponse();
  const latency = performance.now() - start;
  single.push(latency);
  const timing = serverTimings(response.headers.get("server-timing"));
  beyondModel.push(latency - timing.model);
  insideServer.push(timing.total - timing.model);
}

// Each sequential turn's own model request (its growing history, its tool specs) replayed straight to the
// model: the turn's latency minus that is what the server adds (HTTP in and out, session, agent, disk).
const sentBodies = (await modelRequestBodies()) as OpenAI.ChatCompletionCreateParamsNonStreaming[];
const replayed: number[] = [];
for (const body of sentBodies) replayed.push(await timed(() => modelClient.chat.completions.create(body)));
const overhead = single.map((latency, index) => latency - (replayed[index] ?? Number.NaN));

const { quick } = values;
const concurrent: number[] = [];
if (!quick)
  await Promise.all(
    Array.from({ length: 100 }, async (_, session) => {
      for (let index = 0; index < 10; index += 1)
        concurrent.push(await timed(() => turn(`c${session}`, `message ${index}`)));
    }),
  );

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const before = process.memoryUsage().rss;
const IDLE = quick ? 0 : 2000;
for (let batch = 0; batch < IDLE; batch += 100) {
  await Promise.all(
    Array.from({ length: 100 }, (_, index) => turn(`idle-${batch + index}`, "hello, remember me")),
  );
}
gc?.();
const after = process.memoryUsage().rss;

console.log(`model round trip alone (scripted, instant): ${format(modelOnly)}`);
console.log(`turn latency, 1 session (sequential):       ${format(single)}`);
console.log(`turn latency, 100 concurrent sessions:      ${format(concurrent)}`);
console.log(`same model requests replayed directly:      ${format(replayed)}`);
console.log(
  `server overhead per turn, 1 session: ${format(overhead)} (each turn - its own request replayed)`,
);
console.log(
  `server overhead per turn, 1 session, from Server-Timing: ${format(beyondModel)} (each turn - the model wait the server reports)`,
);
console.log(
  `server overhead per turn, 1 session, inside the server: ${format(insideServer)} (Server-Timing total - model)`,
);
if (process.env.BENCH_DUMP_TURNS) console.log(JSON.stringify({ beyondModel, insideServer }));
console.log(
  `  (old measure: turn p50 - tiny-request model p50 = ${(percentile(single, 50) - percentile(modelOnly, 50)).toFixed(2)} ms)`,
);
// `--quick` loads no idle sessions: nothing to divide.
if (IDLE > 0)
  console.log(
    `RSS per loaded idle session: ${((after - before) / IDLE / 1024).toFixed(1)} KiB (${IDLE} sessions of 2 messages; gc ${gc ? "on" : "off"})`,
  );
console.log(
  `node ${process.version}, ${warmUp} warm-up turns, scripted model ${modelProcess ? "in its own process" : "in this process"}`,
);
const figures = new Figures(values.json);
figures.add("model-alone-p50", percentile(modelOnly, 50), "ms");
figures.add("sequential-latency-p50", percentile(single, 50), "ms");
figures.add("sequential-latency-p99", percentile(single, 99), "ms");
figures.add("overhead-replayed-p50", percentile(overhead, 50), "ms");
figures.add("overhead-replayed-p99", percentile(overhead, 99), "ms");
figures.add("overhead-server-timing-p50", percentile(beyondModel, 50), "ms");
figures.add("overhead-server-timing-p99", percentile(beyondModel, 99), "ms");
figures.add("inside-server-p50", percentile(insideServer, 50), "ms");
figures.add("inside-server-p99", percentile(insideServer, 99), "ms");
if (!quick) {
  figures.add("concurrent-latency-p50", percentile(concurrent, 50), "ms");
  figures.add("concurrent-latency-p99", percentile(concurrent, 99), "ms");
}
if (IDLE > 0) figures.add("rss-per-idle-session", (after - before) / IDLE / 1024, "KiB");
figures.write();
await server.close();
await modelProcess?.close();
