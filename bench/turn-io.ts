/**
 * The two pieces of I/O every turn does whose cost depends on the API chosen, each in the ways it could be done,
 * alternated in one process (ADR 0008):
 * - a model request: a 20 KB JSON body POSTed to a local server answering 1 KB of JSON, through undici's `fetch`,
 *   through `createModelFetch` (undici's `request` behind a standard `Response`, what Almanac uses), and through
 *   `node:http` with a keep-alive agent (the floor); process CPU a call, the local server's share included and
 *   the same in each;
 * - two statistics lines (the day's usage file and the session's file): `node:fs/promises` `appendFile`, the
 *   callback `appendFile`, and `appendFileSync` (what Almanac uses); process CPU and the main thread's busy time.
 * Not part of the test run.
 *
 * Run: node --import tsx bench/turn-io.ts [--calls 2000] [--rounds 3] [--json <file>]
 */
import { appendFile as appendFileCallback, appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { appendFile } from "node:fs/promises";
import { Agent, createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs, promisify } from "node:util";
import { createModelFetch } from "@almanac/llm";
import { EnvHttpProxyAgent, fetch as undiciFetch } from "undici";
import { Figures, jsonOption } from "./figures.js";
import { median } from "./sample-stats.js";

const { values } = parseArgs({
  options: {
    calls: { type: "string", default: "2000" },
    rounds: { type: "string", default: "3" },
    ...jsonOption,
  },
});
const calls = Number(values.calls);
const rounds = Number(values.rounds);
const figures = new Figures(values.json);

const answer = JSON.stringify({
  id: "chatcmpl-1",
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "ok ".repeat(300) }, finish_reason: "stop" }],
  usage: { prompt_tokens: 5000, completion_tokens: 300, total_tokens: 5300 },
});
const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(answer),
    });
    response.end(answer);
  });
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`;
const body = JSON.stringify({
  model: "m",
  messages: Array.from({ length: 100 }, (_, index) => ({
    role: "user",
    content: `${"hello there ".repeat(16)}${index}`,
  })),
});
const headers = { "content-type": "application/json", authorization: "Bearer k", accept: "application/json" };

const dispatcher = new EnvHttpProxyAgent({ httpProxy: "", httpsProxy: "", noProxy: "" });
const modelFetch = createModelFetch();
const agent = new Agent({ keepAlive: true });
const requests: Record<string, () => Promise<unknown>> = {
  "undici fetch": async () => (await undiciFetch(url, { method: "POST", headers, body, dispatcher })).json(),
  createModelFetch: async () => (await modelFetch(url, { method: "POST", headers, body })).json(),
  "node:http": () =>
    new Promise((resolve, reject) => {
      const sent = httpRequest(
        url,
        { method: "POST", headers: { ...headers, "content-length": Buffer.byteLength(body) }, agent },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
        },
      );
      sent.on("error", reject);
      sent.end(body);
    }),
};

const dir = mkdtempSync(join(tmpdir(), "almanac-turn-io-"));
const line = `${JSON.stringify({ type: "turn", sessionKey: "discord:default:dm:1234567890", turn: 12, at: Date.now(), contextTokens: 12_345, promptTokens: 12_000, completionTokens: 300 })}\n`;
const appendWithCallback = promisify(appendFileCallback);
const appends: Record<string, (file: string) => Promise<unknown>> = {
  "fs/promises appendFile": (file) => appendFile(file, line, { mode: 0o600 }),
  "callback appendFile": (file) => appendWithCallback(file, line, { mode: 0o600 }),
  appendFileSync: async (file) => appendFileSync(file, line, { mode: 0o600 }),
};

/** Runs `work` `count` times one after another: process CPU and main-thread busy time, in µs each. */
async function measure(work: (index: number) => Promise<unknown>, count: number) {
  for (let index = 0; index < Math.min(200, count); index += 1) await work(index);
  const cpu = process.cpuUsage();
  const loop = performance.eventLoopUtilization();
  for (let index = 0; index < count; index += 1) await work(index);
  const used = process.cpuUsage(cpu);
  const busy = performance.eventLoopUtilization(loop);
  return { cpu: (used.user + used.system) / count, busy: (busy.active * 1000) / count };
}

const results = new Map<string, { cpu: number[]; busy: number[] }>();
const record = (name: string, figure: { cpu: number; busy: number }) => {
  const kept = results.get(name) ?? { cpu: [], busy: [] };
  kept.cpu.push(figure.cpu);
  kept.busy.push(figure.busy);
  results.set(name, kept);
};
try {
  for (let round = 1; round <= rounds; round += 1) {
    for (const [name, send] of Object.entries(requests))
      record(`request: ${name}`, await measure(send, calls));
    for (const [name, write] of Object.entries(appends))
      record(
        `two lines: ${name}`,
        await measure(
          (index) =>
            Promise.all([write(join(dir, "usage.jsonl")), write(join(dir, `session-${index % 10}.jsonl`))]),
          calls,
        ),
      );
  }
} finally {
  server.close();
  agent.destroy();
  await dispatcher.close();
  rmSync(dir, { recursive: true, force: true });
}

console.log(`${process.version}, ${calls} calls a round, medians of ${rounds} rounds (µs each):`);
for (const [name, { cpu, busy }] of results) {
  const slug = name
    .replace(/[^a-zA-Z0-9]+/g, "-")
    .replace(/-$/, "")
    .toLowerCase();
  console.log(
    `  ${name.padEnd(36)} process CPU ${median(cpu).toFixed(1)}, main thread busy ${median(busy).toFixed(1)}`,
  );
  figures.add(`${slug}-cpu`, median(cpu), "µs");
  figures.add(`${slug}-main-thread`, median(busy), "µs");
}
figures.write();
