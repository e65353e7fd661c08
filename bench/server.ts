/**
 * Server overhead per turn with a scripted model that answers instantly, at 1 and at 100 concurrent
 * sessions, and resident memory per loaded idle session.
 * Run: node --expose-gc --import tsx bench/server.ts   (not part of the test run)
 * `-- --quick` runs only the sequential single-session part (for profiling with `--cpu-prof` or counting
 * fsyncs with `strace -f -c -e trace=fsync,fdatasync`).
 */
import { performance } from "node:perf_hooks";
import OpenAI from "openai";
import { BENCH_TOKEN, startInProcessServer } from "./in-process-server.js";
import { percentile } from "./sample-stats.js";

const format = (values: number[]) =>
  `p50 ${percentile(values, 50).toFixed(2)} ms  p99 ${percentile(values, 99).toFixed(2)} ms  (n=${values.length})`;

const server = await startInProcessServer("warn");
const { llm } = server;
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: BENCH_TOKEN, maxRetries: 0 });
const modelClient = new OpenAI({ baseURL: llm.baseURL, apiKey: "x", maxRetries: 0 });

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}
const turn = (user: string, content: string) =>
  client.chat.completions.create({ model: "almanac", user, messages: [{ role: "user", content }] });

// Warm-up.
for (let index = 0; index < 50; index += 1) await turn("warm", `warm ${index}`);

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
const firstSingleRequest = llm.requests.length;
for (let index = 0; index < 300; index += 1)
  single.push(await timed(() => turn("single", `message ${index}`)));

// Each sequential turn's own model request (its growing history, its tool specs) replayed straight to the
// model: the turn's latency minus that is what the server adds (HTTP in and out, session, agent, disk).
const sentBodies = llm.requests
  .slice(firstSingleRequest)
  .filter((request) => request.path === "/v1/chat/completions")
  .map((request) => request.body as OpenAI.ChatCompletionCreateParamsNonStreaming);
const replayed: number[] = [];
for (const body of sentBodies) replayed.push(await timed(() => modelClient.chat.completions.create(body)));
const overhead = single.map((latency, index) => latency - (replayed[index] ?? Number.NaN));

const quick = process.argv.includes("--quick");
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
  `  (old measure: turn p50 - tiny-request model p50 = ${(percentile(single, 50) - percentile(modelOnly, 50)).toFixed(2)} ms)`,
);
console.log(
  `RSS per loaded idle session: ${((after - before) / IDLE / 1024).toFixed(1)} KiB (${IDLE} sessions of 2 messages; gc ${gc ? "on" : "off"})`,
);
console.log(`node ${process.version}`);
await server.close();
