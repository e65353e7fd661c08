/**
 * The scripted model (answers "ok" to anything, instantly) in its own process, for the benches that measure
 * the server without the model's work in the same heap: the strict model tokenizes every request it gets, and
 * in the server's process its garbage (~900 KB a sequential turn, `bench/allocation.ts`) sets the pace of the
 * scavenges the server's turns wait for. Not part of the test run.
 *
 * The child speaks over its stdio, one JSON line an answer: it prints `{"baseURL": …}` once listening, then for
 * each line it reads:
 * - `bodies`: the bodies of the chat requests it got since the last one (kept only with `--keep-bodies`);
 * - `timings`: how long it took to answer each chat request since the last one (from the request's start to the
 *   answer's last byte handed to the kernel, node:http's diagnostics channels), with the request's last user
 *   message to tell them apart and its size;
 * - `pauses`: its garbage collections since the last one (recorded from the first such line on).
 * It closes when its stdin ends. The timings pair the n-th answer finished
 * with the n-th request recorded: exact for requests that come one at a time (the sequential phases that use
 * them); requests in flight together may be paired with each other's times.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { PerformanceObserver } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { lastUserText, script, startScriptedLlm } from "@almanac/testkit";
import { killOnExit } from "./child-cleanup.js";

/** One chat request as the model saw it: its last user message, and the ms from its start to its answer's end. */
export interface ChatTiming {
  readonly lastUserText: string;
  readonly ms: number;
  /** The request's body, in bytes (its `content-length`). */
  readonly bytes: number;
}

/** One garbage collection in the model's process: when it began (ms since the epoch), how long, which kind. */
export interface ModelPause {
  readonly at: number;
  readonly ms: number;
  readonly kind: string;
}

/** A scripted model running in a child process (see {@link startModelProcess}). */
export interface ModelProcess {
  readonly baseURL: string;
  readonly pid: number;
  /** The bodies of the chat requests the model got since the last call (or since it started); needs `keepBodies`. */
  chatBodies(): Promise<unknown[]>;
  /** How long the model took over each chat request answered since the last call, with its last user message. */
  chatTimings(): Promise<ChatTiming[]>;
  /** The model process's garbage collections since the last call: pauses that may fall before its clock starts. */
  pauses(): Promise<ModelPause[]>;
  close(): Promise<void>;
}

/** Options of {@link startModelProcess}. */
export interface ModelProcessOptions {
  /**
   * How long the model keeps an idle connection open (node:http's `keepAliveTimeout`; default Node's 5 s). After a
   * longer pause the server's next requests open new connections, which the model accepts one per turn of its
   * event loop (https://github.com/libuv/libuv/pull/3696).
   */
  readonly keepAliveMs?: number;
  /** Keep the chat requests' bodies for {@link ModelProcess.chatBodies} (otherwise dropped once answered). */
  readonly keepBodies?: boolean;
}

/** Spawns the scripted model in its own process and waits until it listens. */
export async function startModelProcess(options: ModelProcessOptions = {}): Promise<ModelProcess> {
  const keepAlive = options.keepAliveMs === undefined ? [] : ["--keep-alive-ms", String(options.keepAliveMs)];
  const keepBodies = options.keepBodies === true ? ["--keep-bodies"] : [];
  const child = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), "--serve", ...keepAlive, ...keepBodies],
    {
      stdio: ["pipe", "pipe", "inherit"],
    },
  );
  killOnExit(child);
  const lines = createInterface({ input: child.stdout as NonNullable<ChildProcess["stdout"]> });
  const iterator = lines[Symbol.asyncIterator]();
  const nextLine = async (): Promise<string> => {
    const { value, done } = await iterator.next();
    if (done === true) throw new Error("the scripted model's process ended");
    return value;
  };
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const first: unknown = JSON.parse(await nextLine());
  if (
    typeof first !== "object" ||
    first === null ||
    !("baseURL" in first) ||
    typeof first.baseURL !== "string"
  )
    throw new Error(`unexpected first line from the scripted model: ${JSON.stringify(first)}`);
  return {
    baseURL: first.baseURL,
    pid: child.pid ?? Number.NaN,
    async chatBodies() {
      if (options.keepBodies !== true)
        throw new Error("startModelProcess({ keepBodies: true }) keeps the chat requests' bodies");
      child.stdin?.write("bodies\n");
      return JSON.parse(await nextLine()) as unknown[];
    },
    async chatTimings() {
      child.stdin?.write("timings\n");
      return JSON.parse(await nextLine()) as ChatTiming[];
    },
    async pauses() {
      child.stdin?.write("pauses\n");
      return JSON.parse(await nextLine()) as ModelPause[];
    },
    async close() {
      child.stdin?.end();
      await exited;
    },
  };
}

if (process.argv.includes("--serve")) {
  const llm = await startScriptedLlm({});
  const answer = () => script.text("ok");
  llm.setFallback(answer);
  // The scripted model records every request with its body. Kept for the whole run, those records made its
  // heap grow by each request's whole history (2,000 warm-up turns of one conversation: millions of messages),
  // and each scavenge copied them: 19 scavenges of 3–8.5 ms over 300 sequential turns, some of them before its
  // clock starts, so counted as the server's time. So what the benches ask for is taken out of the records after
  // each answer, and the records dropped: the last user message of each chat request, and its body only when
  // the bench wants the bodies (`keepBodies`).
  const keepBodies = process.argv.includes("--keep-bodies");
  const userTexts: string[] = [];
  const bodies: unknown[] = [];
  const drain = () => {
    for (const request of llm.chatRequests()) userTexts.push(lastUserText(request));
    if (keepBodies)
      for (const request of llm.requests)
        if (request.path === "/v1/chat/completions") bodies.push(request.body);
    llm.reset();
    llm.setFallback(answer);
  };
  // Each chat request's start, by its response; when the response finishes, the time it took, matched to the
  // request's record (the scripted model records a request once its body is read) by order of arrival.
  const started = new WeakMap<ServerResponse, { at: number; bytes: number }>();
  const finished: { ms: number; bytes: number }[] = [];
  const keepAliveAt = process.argv.indexOf("--keep-alive-ms");
  const keepAliveMs = keepAliveAt === -1 ? undefined : Number(process.argv[keepAliveAt + 1]);
  subscribe("http.server.request.start", (message) => {
    const { request, response, server } = message as {
      request: IncomingMessage;
      response: ServerResponse;
      server: Server;
    };
    if (keepAliveMs !== undefined) server.keepAliveTimeout = keepAliveMs;
    if (request.url === "/v1/chat/completions")
      started.set(response, {
        at: performance.now(),
        bytes: Number(request.headers["content-length"] ?? Number.NaN),
      });
  });
  subscribe("http.server.response.finish", (message) => {
    const { response } = message as { response: ServerResponse };
    const start = started.get(response);
    if (start === undefined) return;
    finished.push({ ms: performance.now() - start.at, bytes: start.bytes });
    drain();
  });
  // The process's collections, in the clock the bench's turns use too (ms since the epoch), recorded from the
  // first `pauses` command on (benches that never ask keep no record).
  let pauses: ModelPause[] = [];
  let observer: PerformanceObserver | undefined;
  const kinds: Record<number, string> = { 1: "minor", 2: "major", 4: "incremental", 8: "weak callbacks" };
  const observePauses = () => {
    observer ??= new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? 0;
        pauses.push({
          at: performance.timeOrigin + entry.startTime,
          ms: entry.duration,
          kind: kinds[kind] ?? String(kind),
        });
      }
    });
    observer.observe({ entryTypes: ["gc"] });
  };
  process.stdout.write(`${JSON.stringify({ baseURL: llm.baseURL })}\n`);
  const commands = createInterface({ input: process.stdin });
  commands.on("line", (line) => {
    drain();
    if (line === "pauses") {
      observePauses();
      process.stdout.write(`${JSON.stringify(pauses)}\n`);
      pauses = [];
    } else if (line === "timings") {
      // One request at a time, the n-th answer finished is the n-th request recorded (see the top comment).
      const count = Math.min(userTexts.length, finished.length);
      const texts = userTexts.splice(0, count);
      const times = finished.splice(0, count);
      const timings = texts.map((text, index) => ({
        lastUserText: text,
        ms: times[index]?.ms ?? 0,
        bytes: times[index]?.bytes ?? Number.NaN,
      }));
      process.stdout.write(`${JSON.stringify(timings)}\n`);
    } else if (line === "bodies") {
      process.stdout.write(`${JSON.stringify(bodies.splice(0))}\n`);
    }
  });
  commands.on("close", () => void llm.close().then(() => process.exit(0)));
}
