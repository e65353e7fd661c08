/** What a command may write to: `process.stdout`/`process.stderr`, or a buffer in tests. */
export interface CliOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** Everything the CLI touches outside itself, passed in so commands run in-process in tests. */
export interface CliIo {
  readonly stdout: CliOutput;
  readonly stderr: CliOutput;
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Registers a SIGINT/SIGTERM handler (used by `start`); omitted in tests. */
  readonly onSignal?: (signal: "SIGINT" | "SIGTERM", handler: () => void) => void;
  /** HTTP client (default the global `fetch`). */
  readonly fetch?: typeof fetch;
}

/** Options every command accepts. */
export interface GlobalOptions {
  readonly json: boolean;
  /** `--home <dir>`: overrides ALMANAC_HOME. */
  readonly home?: string;
  /** `--url <base>`: the server to talk to instead of the configured host/port. */
  readonly url?: string;
}

/** A command's view of the invocation: I/O, global options and the effective environment. */
export interface CliContext {
  readonly io: CliIo;
  readonly options: GlobalOptions;
  /** `io.env` with `--home` applied as ALMANAC_HOME. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly fetch: typeof fetch;
}

/** The exit codes of the `almanac` command (documented in docs/cli.md). */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  notRunning: 3,
  unauthorized: 4,
  /** `start`: the address cannot be listened on (the port is in use, or not allowed). */
  cannotListen: 5,
  /** EX_CONFIG from sysexits.h: the configuration is invalid. */
  config: 78,
} as const;

/** Writes one line to an output. */
export function writeLine(output: CliOutput, line = ""): void {
  output.write(`${line}\n`);
}

/**
 * Lets a reader that stops early (`almanac doctor | head -1`) end the output quietly instead of crashing
 * with EPIPE: the rest of the output is dropped and the command still finishes with its own exit code.
 */
export function quietOnClosedPipe<T extends NodeJS.WritableStream>(stream: T): T {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    // After EPIPE the stream is destroyed; later writes report ERR_STREAM_DESTROYED, equally harmless.
    if (error.code === "EPIPE" || error.code === "ERR_STREAM_DESTROYED") return;
    throw error;
  });
  return stream;
}
