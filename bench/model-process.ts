/**
 * The scripted model (answers "ok" to anything, instantly) in its own process, for the benches that measure
 * the server without the model's work in the same heap: the strict model tokenizes every request it gets, and
 * in the server's process its garbage (~900 KB a sequential turn, `bench/allocation.ts`) sets the pace of the
 * scavenges the server's turns wait for. Not part of the test run.
 *
 * The child speaks over its stdio: it prints `{"baseURL": …}` once listening; for each `bodies` line it reads,
 * it prints the bodies of the chat requests it got since the last one, as one JSON array line; for each
 * `timings` line, how long it took to answer each chat request since the last one (from the request's start
 * to the answer's last byte handed to the kernel, node:http's diagnostics channels), with the request's last
 * user message to tell them apart; it closes when its stdin ends. The timings pair the n-th answer finished
 * with the n-th request recorded: exact for requests that come one at a time (the sequential phases that use
 * them); requests in flight together may be paired with each other's times.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { lastUserText, script, startScriptedLlm } from "@almanac/testkit";
import { killOnExit } from "./child-cleanup.js";

/** One chat request as the model saw it: its last user message, and the ms from its start to its answer's end. */
export interface ChatTiming {
  readonly lastUserText: string;
  readonly ms: number;
}

/** A scripted model running in a child process (see {@link startModelProcess}). */
export interface ModelProcess {
  readonly baseURL: string;
  readonly pid: number;
  /** The bodies of the chat requests the model got since the last call (or since it started). */
  chatBodies(): Promise<unknown[]>;
  /** How long the model took over each chat request answered since the last call, with its last user message. */
  chatTimings(): Promise<ChatTiming[]>;
  close(): Promise<void>;
}

/** Options of {@link startModelProcess}. */
export interface ModelProcessOptions {
  /**
   * How long the model keeps an idle connection open (node:http's `keepAliveTimeout`; default Node's 5 s). After a
   * longer pause the server's next requests open new connections, which the model accepts one per turn of its
   * event loop (libuv/libuv#3696).
   */
  readonly keepAliveMs?: number;
}

/** Spawns the scripted model in its own process and waits until it listens. */
export async function startModelProcess(options: ModelProcessOptions = {}): Promise<ModelProcess> {
  const keepAlive = options.keepAliveMs === undefined ? [] : ["--keep-alive-ms", String(options.keepAliveMs)];
  const child = spawn(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), "--serve", ...keepAlive],
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
      child.stdin?.write("bodies\n");
      return JSON.parse(await nextLine()) as unknown[];
    },
    async chatTimings() {
      child.stdin?.write("timings\n");
      return JSON.parse(await nextLine()) as ChatTiming[];
    },
    async close() {
      child.stdin?.end();
      await exited;
    },
  };
}

if (process.argv.includes("--serve")) {
  const llm = await startScriptedLlm({});
  llm.setFallback(() => script.text("ok"));
  let seen = 0;
  // Each chat request's start, by its response; when the response finishes, the time it took, matched to the
  // request's record (the scripted model records a request once its body is read) by order of arrival.
  const started = new WeakMap<ServerResponse, number>();
  const finished: number[] = [];
  const keepAliveAt = process.argv.indexOf("--keep-alive-ms");
  const keepAliveMs = keepAliveAt === -1 ? undefined : Number(process.argv[keepAliveAt + 1]);
  subscribe("http.server.request.start", (message) => {
    const { request, response, server } = message as {
      request: IncomingMessage;
      response: ServerResponse;
      server: Server;
    };
    if (keepAliveMs !== undefined) server.keepAliveTimeout = keepAliveMs;
    if (request.url === "/v1/chat/completions") started.set(response, performance.now());
  });
  subscribe("http.server.response.finish", (message) => {
    const { response } = message as { response: ServerResponse };
    const start = started.get(response);
    if (start !== undefined) finished.push(performance.now() - start);
  });
  let timed = 0;
  process.stdout.write(`${JSON.stringify({ baseURL: llm.baseURL })}\n`);
  const commands = createInterface({ input: process.stdin });
  commands.on("line", (line) => {
    if (line === "timings") {
      // One request at a time, the n-th answer finished is the n-th request recorded (see the top comment).
      const chats = llm.chatRequests();
      const count = Math.min(chats.length, finished.length);
      const timings = chats.slice(timed, count).map((request, index) => ({
        lastUserText: lastUserText(request),
        ms: finished[timed + index] ?? 0,
      }));
      timed = count;
      process.stdout.write(`${JSON.stringify(timings)}\n`);
      return;
    }
    if (line !== "bodies") return;
    const bodies = llm.requests
      .slice(seen)
      .filter((request) => request.path === "/v1/chat/completions")
      .map((request) => request.body);
    seen = llm.requests.length;
    process.stdout.write(`${JSON.stringify(bodies)}\n`);
  });
  commands.on("close", () => void llm.close().then(() => process.exit(0)));
}
