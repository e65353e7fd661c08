import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type ScriptedLlm, startScriptedLlm } from "@almanac/testkit";
import OpenAI from "openai";
import { TEST_MODEL_KEY, TEST_TOKEN } from "./test-server.js";

const bin = fileURLToPath(new URL("../bin/almanac.js", import.meta.url));

/** The real `almanac start` in a child process, as a user runs it. */
export interface ServerProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly output: () => string;
  /** Resolves with the exit code (or signal name). */
  readonly exited: Promise<number | string>;
}

/** Starts `almanac start` with the given environment and waits until it listens. */
export async function spawnServer(env: Record<string, string>, timeoutMs = 20_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, [bin, "start"], {
    env: { PATH: process.env.PATH ?? "", ALMANAC_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${output}`)), timeoutMs);
    const check = () => {
      const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"almanac listening"/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on("data", check);
    child.on("exit", () => {
      clearTimeout(timer);
      reject(new Error(`server exited before listening:\n${output}`));
    });
  });
  return { child, url, output: () => output, exited };
}

/** Waits until `condition` holds, polling; fails after the timeout. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = "condition",
): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A scripted model, a data directory and the server processes started on it, for process-level tests. */
export interface ProcessHarness {
  readonly llm: ScriptedLlm;
  readonly home: string;
  /** The environment of a server on this harness's model and data directory. */
  env(): Record<string, string>;
  /** Starts `almanac start` and an OpenAI client for it; the process is killed after the test. */
  start(): Promise<{ server: ServerProcess; client: OpenAI }>;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
}

/** Creates the harness; call `setUp`/`tearDown` from `beforeEach`/`afterEach`. */
export function createProcessHarness(prefix: string, extraEnv: Record<string, string> = {}): ProcessHarness {
  let llm: ScriptedLlm | undefined;
  let home: string | undefined;
  const processes: ServerProcess[] = [];
  const harness: ProcessHarness = {
    get llm() {
      if (!llm) throw new Error("createProcessHarness: call setUp() first");
      return llm;
    },
    get home() {
      if (!home) throw new Error("createProcessHarness: call setUp() first");
      return home;
    },
    env: () => ({
      ALMANAC_HOME: harness.home,
      ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
      ALMANAC_MODEL_BASE_URL: harness.llm.baseURL,
      ALMANAC_MODEL_NAME: "scripted-model",
      ALMANAC_MODEL_API_KEY: TEST_MODEL_KEY,
      ALMANAC_MODEL_MAX_RETRIES: "0",
      ...extraEnv,
    }),
    async start() {
      const server = await spawnServer(harness.env());
      processes.push(server);
      return {
        server,
        client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 }),
      };
    },
    async setUp() {
      llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
      home = await mkdtemp(join(tmpdir(), prefix));
    },
    async tearDown() {
      for (const server of processes.splice(0)) server.child.kill("SIGKILL");
      await llm?.close();
      if (home) await rm(home, { recursive: true, force: true });
      llm = undefined;
      home = undefined;
    },
  };
  return harness;
}
