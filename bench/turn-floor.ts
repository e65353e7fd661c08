/**
 * The floor under the server's per-turn overhead (not part of the test run): the least a turn through
 * `/v1/chat/completions` can cost with the libraries the server is built on, and nothing of its own. This
 * process serves `POST /v1/chat/completions` (fastify, or bare `node:http` with `--http node`), keeps one
 * conversation in memory, and sends it whole to the scripted model (its own process, as in
 * bench/server-process.ts) with the `openai` client over the llm package's model fetch (`createModelFetch`); a
 * client in a third process sends `--turns` sequential turns (after `--warm-up` ones). Printed: the turn latency
 * p50/p99 as the client saw it, the same minus the time the model itself took over the turn's request (its own
 * clock, bench/model-process.ts; one conversation only), and this process's CPU per turn, to set beside
 * bench/server-process.ts's "300 sequential turns" row (no transcript, snapshot, session, agent, logging or
 * statistics here).
 *
 * `--llm http` calls the model with a bare keep-alive `node:http` request instead of the `openai` client.
 * `--sessions N` runs N conversations at once, `--turns` each (bench/server-process.ts's 100 × 10 is
 * `--sessions 100 --turns 10`; each conversation sends its first turn after all have warmed up). Before them,
 * N warm-up turns at once leave N keep-alive connections open at both hops, as server-process's loaded sessions
 * leave them for its 100 × 10. `--cold-connections` skips that: then the first turns wait for their
 * connections to be accepted, and libuv (1.45 and later, so Node 20 and 24) accepts one connection per turn
 * of the event loop (https://github.com/libuv/libuv/pull/3696). With the loop busy serving the conversations
 * already connected, the rest trickle in one every 15–40 ms on a 2-core machine, and they are the p99.
 *
 * `--idle-seconds S` idles S seconds between the warm-up and the timed turns, as bench/server-process.ts idles
 * before its 100 × 10: the scripted model closes its idle connections after Node's default 5 s, and V8's memory
 * reducer may collect meanwhile. `--idle-gc` makes sure one full collection happens in this process, 10 s into
 * the idle (halfway into a shorter one), as the memory reducer's would (it needs `node --expose-gc`). `--warm-up N`
 * sets the sequential warm-up turns (default 50). `--json <file>` writes the figures (bench/figures.ts).
 *
 * Run: node [--expose-gc] --import tsx bench/turn-floor.ts [--http fastify|node] [--llm openai|http] [--turns 300]
 *      [--sessions 1] [--cold-connections] [--warm-up 50] [--idle-seconds 0] [--idle-gc] [--json <file>]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Agent, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createModelFetch } from "@almanac/llm";
import Fastify from "fastify";
import OpenAI from "openai";
import { killOnExit } from "./child-cleanup.js";
import { Figures, jsonOption } from "./figures.js";
import { httpCall } from "./http-call.js";
import { startModelProcess } from "./model-process.js";

const { values } = parseArgs({
  options: {
    http: { type: "string", default: "fastify" },
    turns: { type: "string", default: "300" },
    llm: { type: "string", default: "openai" },
    client: { type: "string" },
    sessions: { type: "string", default: "1" },
    "cold-connections": { type: "boolean", default: false },
    "warm-up": { type: "string", default: "50" },
    "idle-seconds": { type: "string", default: "0" },
    "idle-gc": { type: "boolean", default: false },
    ...jsonOption,
  },
});
const turns = Number(values.turns);
const sessions = Number(values.sessions);

/** The client's process: warm-up, then `turns` timed turns; prints the latencies as JSON. */
async function runClient(port: number): Promise<void> {
  const agent = new Agent({ keepAlive: true });
  const send = async (user: string, content = "hello there"): Promise<void> => {
    const body = JSON.stringify({ model: "floor", user, messages: [{ role: "user", content }] });
    const { status } = await httpCall(
      agent,
      "POST",
      `http://127.0.0.1:${port}/v1/chat/completions`,
      { "content-type": "application/json" },
      body,
    );
    if (status !== 200) throw new Error(`HTTP ${status}`);
  };
  for (let turn = 0; turn < Number(values["warm-up"]); turn += 1) await send("warm-up");
  if (sessions > 1 && !values["cold-connections"])
    await Promise.all(Array.from({ length: sessions }, () => send("warm-up")));
  process.stdout.write("idle\n");
  await new Promise((resolve) => setTimeout(resolve, Number(values["idle-seconds"]) * 1000));
  process.stdout.write("start\n");
  // Each turn's text names it, so the model's own time over it can be matched (bench/model-process.ts).
  const latencies: { text: string; ms: number }[] = [];
  const conversation = async (user: string): Promise<void> => {
    for (let turn = 0; turn < turns; turn += 1) {
      const text = `${user} turn ${turn}`;
      const started = performance.now();
      await send(user, text);
      latencies.push({ text, ms: performance.now() - started });
    }
  };
  await Promise.all(Array.from({ length: sessions }, (_, index) => conversation(`session-${index}`)));
  process.stdout.write(`${JSON.stringify(latencies)}\n`);
  agent.destroy();
}

function lines(child: ChildProcess): AsyncIterator<string> {
  let buffered = "";
  const waiting: ((line: string) => void)[] = [];
  const ready: string[] = [];
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 1);
      const next = waiting.shift();
      if (next) next(line);
      else ready.push(line);
    }
  });
  return {
    next: () =>
      new Promise((resolve) => {
        const line = ready.shift();
        if (line !== undefined) resolve({ value: line, done: false });
        else waiting.push((value) => resolve({ value, done: false }));
      }),
  };
}

const modelAgent = new Agent({ keepAlive: true });

/** POSTs `json` to `url` over keep-alive `node:http` and parses the answer. */
async function bareCall(url: string, json: string): Promise<unknown> {
  const { text } = await httpCall(
    modelAgent,
    "POST",
    url,
    { "content-type": "application/json", authorization: "Bearer k" },
    json,
  );
  return JSON.parse(text);
}

async function main(): Promise<void> {
  const idleGc = values["idle-gc"] ? (globalThis as { gc?: () => void }).gc : undefined;
  if (values["idle-gc"] && idleGc === undefined)
    throw new Error("--idle-gc needs V8's gc(): run node --expose-gc --import tsx bench/turn-floor.ts …");
  const model = await startModelProcess();
  const { baseURL } = model;
  const client = new OpenAI({
    baseURL,
    apiKey: "k",
    maxRetries: 0,
    logLevel: "off",
    fetch: createModelFetch(),
  });
  const histories = new Map<string, { role: "user" | "assistant"; content: string }[]>();
  const turn = async (body: unknown): Promise<unknown> => {
    const { messages, user } = body as { messages: { role: "user"; content: string }[]; user: string };
    let history = histories.get(user);
    if (history === undefined) {
      history = [];
      histories.set(user, history);
    }
    history.push(...messages);
    const json = JSON.stringify({ model: "scripted-model", messages: history });
    const answer = (
      values.llm === "http"
        ? await bareCall(`${baseURL}/chat/completions`, json)
        : await client.post("/chat/completions", {
            body: json,
            headers: { "content-type": "application/json" },
          })
    ) as { choices: { message: { content: string } }[] };
    history.push({ role: "assistant", content: answer.choices[0]?.message.content ?? "" });
    return answer;
  };

  let port: number;
  let close: () => Promise<void>;
  if (values.http === "node") {
    const server = createServer((incoming, outgoing) => {
      const chunks: Buffer[] = [];
      incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
      incoming.on("end", () => {
        void turn(JSON.parse(Buffer.concat(chunks).toString("utf8"))).then((answer) => {
          outgoing.setHeader("content-type", "application/json");
          outgoing.end(JSON.stringify(answer));
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  } else {
    const app = Fastify({ logger: false });
    app.post("/v1/chat/completions", (incoming) => turn(incoming.body));
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = (app.server.address() as AddressInfo).port;
    close = () => app.close();
  }

  const clientProcess = spawn(
    process.execPath,
    [
      ...process.execArgv,
      fileURLToPath(import.meta.url),
      "--client",
      String(port),
      "--turns",
      String(turns),
      "--sessions",
      String(sessions),
      ...(values["cold-connections"] ? ["--cold-connections"] : []),
      "--warm-up",
      values["warm-up"],
      "--idle-seconds",
      values["idle-seconds"],
    ],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  killOnExit(clientProcess);
  const output = lines(clientProcess);
  await output.next(); // warmed up, idle from now
  const idleCollection =
    idleGc === undefined
      ? undefined
      : setTimeout(() => idleGc(), Math.min(10, Number(values["idle-seconds"]) / 2) * 1000);
  await output.next(); // the timed turns start
  clearTimeout(idleCollection);
  const cpuBefore = process.cpuUsage();
  const turnsSeen = JSON.parse((await output.next()).value) as { text: string; ms: number }[];
  const cpu = process.cpuUsage(cpuBefore);
  const modelOwn = new Map<string, number>();
  for (const { lastUserText, ms } of await model.chatTimings())
    modelOwn.set(lastUserText, (modelOwn.get(lastUserText) ?? 0) + ms);
  const latencies = turnsSeen.map((seen) => seen.ms).sort((a, b) => a - b);
  const beyondModel = turnsSeen
    .map((seen) => seen.ms - (modelOwn.get(seen.text) ?? Number.NaN))
    .sort((a, b) => a - b);
  const at = (share: number, values = latencies) =>
    values[Math.min(values.length - 1, Math.floor(share * values.length))]!;
  const shape =
    sessions === 1
      ? `${turns} sequential turns`
      : `${sessions} sessions at once × ${turns} turns, ${values["cold-connections"] ? "new" : "open"} connections`;
  // After an idle longer than the model's keep-alive (Node's 5 s) the connections the warm-up opened are gone.
  const idle = Number(values["idle-seconds"]);
  const after = idle > 0 ? `, after ${idle} s idle${values["idle-gc"] ? " with a full collection" : ""}` : "";
  const all = turns * sessions;
  console.log(
    `turn floor (${values.http === "node" ? "node:http" : "fastify"} + ${values.llm === "http" ? "bare node:http call" : "openai client"}, ${shape}${after}): p50 ${at(0.5).toFixed(2)} ms, p99 ${at(0.99).toFixed(2)} ms${sessions === 1 ? `; beyond the model's own time p50 ${at(0.5, beyondModel).toFixed(2)} ms, p99 ${at(0.99, beyondModel).toFixed(2)} ms` : ""}; this process's CPU ${((cpu.user + cpu.system) / 1000 / all).toFixed(2)} ms a turn, of it system ${(cpu.system / 1000 / all).toFixed(2)} ms`,
  );
  const figures = new Figures(values.json);
  figures.add("latency-p50", at(0.5), "ms");
  figures.add("latency-p99", at(0.99), "ms");
  if (sessions === 1) {
    figures.add("beyond-model-p50", at(0.5, beyondModel), "ms");
    figures.add("beyond-model-p99", at(0.99, beyondModel), "ms");
  }
  figures.add("cpu-per-turn", (cpu.user + cpu.system) / 1000 / all, "ms");
  figures.write();
  await model.close();
  modelAgent.destroy();
  await close();
}

if (values.client !== undefined) await runClient(Number(values.client));
else await main();
