import { z } from "zod";
import { type AdminClient, CliError, createAdminClient, resolveTarget } from "./admin-client.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";

const searchAnswer = z.looseObject({
  mode: z.string().optional(),
  note: z.string().optional(),
  results: z.array(
    z.looseObject({
      path: z.string(),
      startLine: z.number(),
      endLine: z.number(),
      score: z.number(),
      snippet: z.string(),
      source: z.string().optional(),
      date: z.string().optional(),
    }),
  ),
});

const indexStatus = z.looseObject({
  state: z.string().optional(),
  files: z.number().optional(),
  chunks: z.number().optional(),
  embeddedChunks: z.number().optional(),
  progress: z.looseObject({ phase: z.string().optional(), done: z.number(), total: z.number() }).optional(),
  lastError: z.string().optional(),
});
type IndexStatus = z.infer<typeof indexStatus>;

/** Options of the memory commands. */
export interface MemoryOptions {
  /** `--max N` of `memory search`. */
  readonly max?: string;
}

const USAGE = "usage: almanac memory search <query> [--max N] | almanac memory reindex";

/** `almanac memory search|reindex` against the running server. */
export async function memoryCommand(
  context: CliContext,
  args: readonly string[],
  options: MemoryOptions = {},
): Promise<number> {
  const [action, ...rest] = args;
  if (action === "search" && rest.length > 0) return search(context, rest.join(" "), options.max);
  if (action === "reindex" && rest.length === 0) return reindex(context);
  writeLine(context.io.stderr, USAGE);
  return EXIT.usage;
}

function oneLine(text: string, limit: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

async function search(context: CliContext, query: string, max: string | undefined): Promise<number> {
  const maxResults = max === undefined ? 10 : Number(max);
  if (!Number.isInteger(maxResults) || maxResults < 1) {
    writeLine(context.io.stderr, `--max must be a positive whole number, not "${max}"`);
    return EXIT.usage;
  }
  const client = createAdminClient(resolveTarget(context), context.fetch);
  const params = new URLSearchParams({ q: query, maxResults: String(maxResults) });
  const parsed = searchAnswer.safeParse(await client.json("GET", `/api/memory/search?${params}`));
  if (!parsed.success) {
    throw new CliError(
      "cli.malformed_response",
      "GET /api/memory/search: unexpected answer shape",
      EXIT.failure,
    );
  }
  const answer = parsed.data;
  const { stdout } = context.io;
  if (context.options.json) {
    writeLine(stdout, JSON.stringify(answer, null, 2));
    return EXIT.ok;
  }
  if (answer.note) writeLine(context.io.stderr, `note: ${answer.note}`);
  if (answer.results.length === 0) writeLine(stdout, `no matches for "${query}"`);
  for (const result of answer.results) {
    writeLine(
      stdout,
      `${result.path}:${result.startLine}-${result.endLine}  ${result.date ?? "-"}  ${result.score.toFixed(3)}  ${oneLine(result.snippet, 120)}`,
    );
  }
  return EXIT.ok;
}

async function readStatus(client: AdminClient): Promise<IndexStatus> {
  const parsed = indexStatus.safeParse(await client.json("GET", "/api/memory/index"));
  if (!parsed.success) {
    throw new CliError(
      "cli.malformed_response",
      "GET /api/memory/index: unexpected answer shape",
      EXIT.failure,
    );
  }
  return parsed.data;
}

function summary(status: IndexStatus): string {
  const parts = [
    status.files === undefined ? undefined : `${status.files} files`,
    status.chunks === undefined ? undefined : `${status.chunks} chunks`,
    status.embeddedChunks === undefined ? undefined : `${status.embeddedChunks} embedded`,
  ].filter((part) => part !== undefined);
  return parts.length > 0 ? parts.join(", ") : "done";
}

/** Progress display: a bar on a terminal, plain lines when piped or with --json (on stderr then). */
interface ProgressView {
  update(phase: string, done: number, total: number): void;
  stop(): void;
}

async function progressView(context: CliContext): Promise<ProgressView> {
  const interactive = context.io.stdout.isTTY === true && !context.options.json;
  if (interactive) {
    // Loaded only for a progress bar on a terminal: `memory search` and piped runs never need it.
    const cliProgress = await import("cli-progress");
    const bar = new cliProgress.SingleBar(
      {
        format: "{phase} [{bar}] {value}/{total}",
        hideCursor: true,
        // Only reached when stdout is a terminal, i.e. a tty.WriteStream with cursor control.
        stream: context.io.stdout as unknown as NodeJS.WritableStream,
      },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      update(phase, done, total) {
        if (!started) bar.start(total, done, { phase });
        else bar.setTotal(total);
        started = true;
        bar.update(done, { phase });
      },
      stop: () => {
        if (started) bar.stop();
      },
    };
  }
  const output = context.options.json ? context.io.stderr : context.io.stdout;
  let last = "";
  return {
    update(phase, done, total) {
      const line = `${phase} ${done}/${total}`;
      if (line !== last) writeLine(output, line);
      last = line;
    },
    stop() {},
  };
}

/** Index states that mean work is still under way (anything else, e.g. `idle`, ends the wait). */
const BUSY_STATES = new Set(["indexing", "reindexing", "syncing"]);

/** How the indexer's progress phases are shown. */
const PHASE_LABELS: Readonly<Record<string, string>> = { index: "indexing", embed: "embedding" };

/** How often `memory reindex` asks for the index status. */
const POLL_MS = 250;

async function reindex(context: CliContext): Promise<number> {
  const client = createAdminClient(resolveTarget(context), context.fetch);
  try {
    await client.json("POST", "/api/memory/index/reindex", {});
  } catch (error) {
    // 409: a rebuild is already running; follow that one instead.
    if (!(error instanceof CliError && error.status === 409)) throw error;
    writeLine(context.io.stderr, "a reindex is already running; following it");
  }
  const view = await progressView(context);
  let status: IndexStatus;
  try {
    for (;;) {
      status = await readStatus(client);
      if (status.progress) {
        view.update(
          PHASE_LABELS[status.progress.phase ?? "index"] ?? "indexing",
          status.progress.done,
          status.progress.total,
        );
      }
      if (!BUSY_STATES.has(status.state ?? "idle")) break;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } finally {
    view.stop();
  }
  if (context.options.json) {
    writeLine(context.io.stdout, JSON.stringify(status, null, 2));
  } else {
    writeLine(context.io.stdout, `reindexed: ${summary(status)}`);
  }
  if (status.lastError !== undefined) {
    writeLine(context.io.stderr, `the rebuild failed: ${status.lastError}`);
    return EXIT.failure;
  }
  return EXIT.ok;
}
