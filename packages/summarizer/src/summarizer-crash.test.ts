import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const childScript = fileURLToPath(new URL("../test/summary-queue-child.ts", import.meta.url));

let llm: ScriptedLlm;
let base: string;
let workspace: string;
let stateDir: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  llm = await startScriptedLlm({ apiKey: "test-key" });
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-crash-")));
  workspace = path.join(base, "workspace");
  stateDir = path.join(base, "state");
  await mkdir(workspace, { recursive: true });
});

afterEach(async () => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await llm.close();
  await rm(base, { recursive: true, force: true });
});

interface Child {
  readonly process: ChildProcess;
  readonly events: Array<Record<string, unknown>>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

function startChild(options: {
  enqueue?: Array<{ text: string; timestamp: number }>;
  killOnCommit?: boolean;
}): Child {
  const config = {
    workspace,
    stateDir,
    baseURL: llm.baseURL,
    enqueue: options.enqueue ?? [],
    killOnCommit: options.killOnCommit ?? false,
  };
  const child = spawn(process.execPath, ["--import", "tsx", childScript], {
    cwd: repoRoot,
    env: { ...process.env, ALMANAC_QUEUE_CHILD: JSON.stringify(config) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const events: Array<Record<string, unknown>> = [];
  let buffered = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) if (line.trim() !== "") events.push(JSON.parse(line));
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>(
    (resolve) => {
      child.on("exit", (code, signal) => resolve({ code, signal, stderr }));
    },
  );
  return { process: child, events, exited };
}

async function until(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function journal(): Promise<
  Array<{ state: string; checkpoint?: { days: Record<string, { status: string }> } }>
> {
  const dir = path.join(stateDir, "summarizer", "jobs");
  const names = (await readdir(dir)).filter((name) => name.endsWith(".json")).sort();
  return Promise.all(names.map(async (name) => JSON.parse(await readFile(path.join(dir, name), "utf8"))));
}

const logFile = () => path.join(workspace, "memory", "2024-05-01.md");
const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

describe("summarizer queue across process crashes", () => {
  it("completes every job exactly once after SIGKILLs while a job is pending, running and committing", async () => {
    // Run 1: job A's model call hangs (A running, B pending); the process is killed.
    llm.enqueue(script.hang());
    const first = startChild({
      enqueue: [
        { text: "The alpha release ships on Monday.", timestamp: Date.UTC(2024, 4, 1, 9) },
        { text: "The bravo bug is OPS-77.", timestamp: Date.UTC(2024, 4, 1, 10) },
      ],
    });
    await until(
      () => llm.chatRequests().length === 1 && first.events.some((e) => e.event === "started"),
      "job A to be running",
    );
    first.process.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    expect((await journal()).map((job) => job.state)).toEqual(["running", "pending"]);

    // Run 2: A runs again; the process dies right after journaling A's commit, before changing the file.
    llm.enqueue(
      script.toolCalls([{ name: "read_day_log", arguments: {} }]),
      script.toolCalls([
        { name: "append_day_log", arguments: { text: "- 09:00 alpha release ships on Monday" } },
      ]),
      script.text("Added."),
    );
    const second = startChild({ killOnCommit: true });
    const secondExit = await second.exited;
    expect(secondExit.signal, secondExit.stderr).toBe("SIGKILL");
    expect(second.events.map((e) => e.event)).toEqual(["started", "dying-at-commit"]);
    await expect(readFile(logFile(), "utf8")).rejects.toMatchObject({ code: "ENOENT" });
    const [jobA, jobB] = await journal();
    expect(jobA?.state).toBe("running");
    expect(jobA?.checkpoint?.days["2024-05-01"]?.status).toBe("committing");
    expect(jobB?.state).toBe("pending");

    // Run 3: A's journaled commit is applied without the model; B runs normally.
    llm.enqueue(
      script.toolCalls([{ name: "read_day_log", arguments: {} }]),
      script.toolCalls([{ name: "append_day_log", arguments: { text: "- 10:00 bravo bug is OPS-77" } }]),
      script.text("Added."),
    );
    const third = startChild({});

    const thirdExit = await third.exited;
    expect(thirdExit.code, thirdExit.stderr).toBe(0);
    expect(third.events.at(-1)).toEqual({
      event: "idle",
      stats: { pending: 0, running: 0, parked: 0, done: 2 },
    });

    const log = await readFile(logFile(), "utf8");
    expect(log).toBe("# 2024-05-01\n- 09:00 alpha release ships on Monday\n- 10:00 bravo bug is OPS-77\n");
    expect(occurrences(log, "alpha release")).toBe(1);
    expect(occurrences(log, "OPS-77")).toBe(1);
    // 1 hung call + 3 for A's second run + 3 for B: A's commit was finished without asking the model.
    expect(llm.chatRequests()).toHaveLength(7);
    expect(toolResultOf(6)).toContain("alpha release");
  }, 60_000);
});

/** The read_day_log result B's agent saw: proves B merged on top of A's committed entry. */
function toolResultOf(requestIndex: number): string {
  const request = llm.chatRequests()[requestIndex - 1];
  return String(request?.messages.find((message) => message.role === "tool")?.content ?? "");
}
