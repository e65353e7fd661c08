import { isAlmanacError } from "@almanac/core";
import { defaultLogDestination } from "../logger.js";
import { type ServerHandle, startServer } from "../server.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";

/**
 * `almanac start`: runs the server until SIGINT/SIGTERM, then stops gracefully. Resolves with the exit code
 * once stopped: 0 after a clean stop, 1 when a second signal cuts the shutdown short or it fails, 5 when the
 * address cannot be listened on (port in use), 78 when the configuration is invalid or the data directory is not
 * writable (one line on stderr, never a stack).
 */
export async function startCommand(context: CliContext): Promise<number> {
  let server: ServerHandle;
  try {
    const logDestination = defaultLogDestination(context.io.stdout);
    server = await startServer({
      env: context.env,
      cwd: context.io.cwd,
      ...(logDestination === undefined ? {} : { logDestination }),
    });
  } catch (error) {
    if (isAlmanacError(error) && error.category === "user") {
      writeLine(context.io.stderr, error.message);
      return error.code === "server.port_in_use" || error.code === "server.cannot_listen"
        ? EXIT.cannotListen
        : EXIT.config;
    }
    throw error;
  }
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        writeLine(context.io.stderr, `${signal} again: exiting now`);
        resolve(EXIT.failure);
        return;
      }
      stopping = true;
      server.close().then(
        () => resolve(EXIT.ok),
        (error: unknown) => {
          writeLine(context.io.stderr, `shutdown failed: ${String(error)}`);
          resolve(EXIT.failure);
        },
      );
    };
    context.io.onSignal?.("SIGINT", () => stop("SIGINT"));
    context.io.onSignal?.("SIGTERM", () => stop("SIGTERM"));
  });
}
