import { realpathSync } from "node:fs";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { runCli } from "./cli/cli.js";
import { quietOnClosedPipe } from "./cli/cli-context.js";

/** Resolves once everything written to the stream so far has been handed to the OS. */
function flushed(stream: Writable): Promise<void> {
  return new Promise((resolve) => stream.write("", () => resolve()));
}

/**
 * The `almanac` command: runs the CLI on the process's arguments, streams and environment, then exits with
 * its code (`almanac start` returns only after a graceful stop). See docs/cli.md.
 */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const code = await runCli(argv, {
    stdout: quietOnClosedPipe(process.stdout),
    stderr: process.stderr,
    stdin: process.stdin,
    env: process.env,
    cwd: process.cwd(),
    onSignal: (signal, handler) => process.on(signal, handler),
  });
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  process.exit(code);
}

/** True when this module is the program (`node dist/main.js`, `tsx src/main.ts`), not imported by bin/almanac.js. */
function isProgram(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isProgram()) await main();
