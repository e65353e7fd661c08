import { parseArgs } from "node:util";
import { type CliContext, type CliIo, EXIT, writeLine } from "./cli-context.js";

/** The usage text of `almanac help`. */
const USAGE = `Usage: almanac <command> [options]

Commands:
  start                      run the server (stops gracefully on Ctrl-C / SIGTERM)
  doctor                     check configuration, data directory, model, embeddings, channels, server
  sessions list              list the running server's sessions
  tools list                 list the running server's tools and MCP servers
  tasks [list]               list scheduled tasks; tasks pause|resume|run|delete <id>
  memory search <query>      search the memory files (--max N results, default 10)
  memory reindex             rebuild the memory index and show its progress
  chat [--session ID]        chat with a session in the terminal (default session "cli"); /exit or Ctrl-D quits
  backup create [--out FILE] archive the data directory (by the running server, else directly); list; verify FILE
  backup restore FILE        restore an archive into an empty data directory (--home DIR)
  help                       show this text

Options:
  --json                     machine-readable output
  --home <dir>               data directory (sets ALMANAC_HOME)
  --url <base>               server URL (default: the configured host and port)
  -h, --help                 show this text

Exit codes: 0 ok, 1 failed, 2 usage error, 3 server not running, 4 admin token refused, 78 invalid configuration.
See docs/cli.md.`;

const OPTIONS = {
  json: { type: "boolean" },
  home: { type: "string" },
  url: { type: "string" },
  help: { type: "boolean", short: "h" },
  session: { type: "string" },
  max: { type: "string" },
  out: { type: "string" },
} as const;

/** Parses the arguments, runs the command and returns the process exit code. Never calls `process.exit`. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    writeLine(io.stderr, `${(error as Error).message}\n\n${USAGE}`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  const [command, ...args] = positionals;
  if (values.help || command === "help") {
    writeLine(io.stdout, USAGE);
    return EXIT.ok;
  }
  const context: CliContext = {
    io,
    options: {
      json: values.json === true,
      ...(values.home === undefined ? {} : { home: values.home }),
      ...(values.url === undefined ? {} : { url: values.url }),
    },
    env: values.home === undefined ? io.env : { ...io.env, ALMANAC_HOME: values.home },
    fetch: io.fetch ?? fetch,
  };
  try {
    switch (command) {
      // Each command is loaded on demand: a process loads only the code of the command it runs (the client
      // commands never load the server, fastify, the channel SDKs, the tokenizer or SQLite; docs/build.md).
      case "start": {
        const { startCommand } = await import("./start-command.js");
        return await startCommand(context);
      }
      case "doctor": {
        const { doctorCommand } = await import("./doctor.js");
        return await doctorCommand(context);
      }
      case "sessions": {
        const { sessionsCommand } = await import("./sessions-command.js");
        return await sessionsCommand(context, args);
      }
      case "tasks": {
        const { tasksCommand } = await import("./tasks-command.js");
        return await tasksCommand(context, args);
      }
      case "tools": {
        const { toolsCommand } = await import("./tools-command.js");
        return await toolsCommand(context, args);
      }
      case "memory": {
        const { memoryCommand } = await import("./memory-command.js");
        return await memoryCommand(context, args, values.max === undefined ? {} : { max: values.max });
      }
      case "chat": {
        const { chatCommand } = await import("./chat-command.js");
        return await chatCommand(context, values.session === undefined ? {} : { session: values.session });
      }
      case "backup": {
        const { backupCommand } = await import("./backup-command.js");
        return await backupCommand(context, args, values.out === undefined ? {} : { out: values.out });
      }
      case undefined:
        writeLine(io.stderr, USAGE);
        return EXIT.usage;
      default:
        writeLine(io.stderr, `unknown command: ${command}\n\n${USAGE}`);
        return EXIT.usage;
    }
  } catch (error) {
    const { CliError } = await import("./admin-client.js");
    if (error instanceof CliError) {
      writeLine(io.stderr, error.message);
      return error.exitCode;
    }
    throw error;
  }
}
