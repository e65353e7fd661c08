import { isAlmanacError } from "@almanac/core";
import { startServer } from "./server.js";

/** `almanac start`: runs the server until SIGINT/SIGTERM, then stops gracefully and exits 0. */
export async function main(): Promise<void> {
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({ env: process.env, cwd: process.cwd() });
  } catch (error) {
    if (isAlmanacError(error) && error.category === "user") {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      process.stderr.write(`${signal} again: exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        process.stderr.write(`shutdown failed: ${String(error)}\n`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}
