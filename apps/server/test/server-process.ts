import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

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
  condition: () => boolean,
  timeoutMs = 10_000,
  what = "condition",
): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
