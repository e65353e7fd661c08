/**
 * The scripted model (answers "ok" to anything, instantly) in its own process, for the benches that measure
 * the server without the model's work in the same heap: the strict model tokenizes every request it gets, and
 * in the server's process its garbage (~900 KB a sequential turn, `bench/allocation.ts`) sets the pace of the
 * scavenges the server's turns wait for. Not part of the test run.
 *
 * The child speaks over its stdio: it prints `{"baseURL": …}` once listening; for each `bodies` line it reads,
 * it prints the bodies of the chat requests it got since the last one, as one JSON array line; it closes when
 * its stdin ends.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { script, startScriptedLlm } from "@almanac/testkit";
import { killOnExit } from "./child-cleanup.js";

/** A scripted model running in a child process (see {@link startModelProcess}). */
export interface ModelProcess {
  readonly baseURL: string;
  readonly pid: number;
  /** The bodies of the chat requests the model got since the last call (or since it started). */
  chatBodies(): Promise<unknown[]>;
  close(): Promise<void>;
}

/** Spawns the scripted model in its own process and waits until it listens. */
export async function startModelProcess(): Promise<ModelProcess> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--serve"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
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
  process.stdout.write(`${JSON.stringify({ baseURL: llm.baseURL })}\n`);
  const commands = createInterface({ input: process.stdin });
  commands.on("line", (line) => {
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
