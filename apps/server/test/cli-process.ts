import { type ChildProcessByStdio, spawn } from "node:child_process";
import { createServer } from "node:net";
import type { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../bin/almanac.js", import.meta.url));

/** What a finished `almanac` invocation printed and how it exited. */
export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link runAlmanac}. */
export interface RunAlmanacOptions {
  /** The whole environment besides PATH (nothing else leaks in from the test process). */
  readonly env?: Record<string, string>;
  /** Working directory (where `.env` and `almanac.yaml` are looked up); use a temp dir. */
  readonly cwd: string;
  /** Text piped to stdin, then closed; stdin is closed at once when omitted. */
  readonly stdin?: string;
  readonly timeoutMs?: number;
  /** Run as this user and group (a test running as root uses it to meet permission checks root skips). */
  readonly user?: { readonly uid: number; readonly gid: number };
}

/** A spawned child's stdout and stderr as text, and its exit code once it closes (killed after `timeoutMs`). */
export function collectOutput(
  child: ChildProcessByStdio<Writable | null, Readable, Readable>,
  what: string,
  timeoutMs: number,
): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what} did not finish in time:\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs the real `almanac` command as a user would and collects its output. */
export function runAlmanac(args: readonly string[], options: RunAlmanacOptions): Promise<CliRun> {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { PATH: process.env.PATH ?? "", ...options.env },
    cwd: options.cwd,
    stdio: ["pipe", "pipe", "pipe"],
    ...(options.user === undefined ? {} : { uid: options.user.uid, gid: options.user.gid }),
  });
  child.stdin.end(options.stdin ?? "");
  return collectOutput(child, `almanac ${args.join(" ")}`, options.timeoutMs ?? 20_000);
}

/** A loopback URL nothing listens on (a port that was free a moment ago). */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
