import { readFile, realpath } from "node:fs/promises";
import * as path from "node:path";
import { defineTool, resolveWorkspacePath, type Tool } from "@almanac/agent";
import { describeError, isAlmanacError } from "@almanac/core";
import {
  isInMemoryDirectory,
  isPathInScope,
  MEMORY_FILE,
  type MemoryScope,
  OWNER_SCOPE,
  type ScopePathFilter,
  scopePathFilter,
  sharedScopePrefix,
  toRelativePath,
} from "@almanac/memory-files";
import { z } from "zod";
import type { MemorySearch } from "./memory-search.js";
import type { MemorySearchResponse } from "./types.js";

/** Options of {@link createMemoryTools}. */
export interface MemoryToolsOptions {
  readonly search: MemorySearch;
  /** The workspace root; `memory_get` reads only the scope's files inside it. */
  readonly workspace: string;
  /**
   * Whose memory the tools reach (default the owner's): the owner's private files, or a shared chat's
   * own log folder only. Enforced here, whatever the model asks for.
   */
  readonly scope?: MemoryScope;
  /** Lines `memory_get` returns when the model gives no `lines` (default 200). */
  readonly defaultGetLines?: number;
  /** Most lines one `memory_get` call returns (default 1000). */
  readonly maxGetLines?: number;
  /**
   * Most tokens one tool result may take (default: no limit). The server sizes it from the model's window:
   * a result larger than the compactor's "giant output" limit would be cut before the model read it.
   */
  readonly maxOutputTokens?: number;
  /** Counts tokens the way the prompt is counted (required with `maxOutputTokens`). */
  readonly countTokens?: (text: string) => number;
}

/** Snippet sizes tried, largest first, when a search result must shrink to fit the output budget. */
const SHRINKING_SNIPPETS = [450, 300, 200, 120] as const;
/** Results kept before snippets start to shrink: a few full passages beat many cut ones. */
const RESULTS_BEFORE_SHRINKING = 3;

function failure(content: string): { content: string; isError: true } {
  return { content, isError: true };
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error && typeof error.code === "string"
    ? error.code
    : undefined;
}

// The tools' argument schemas are built once, not with every toolkit: toolkits are made per turn, and building
// zod schemas (and their JSON Schemas) was a tenth of a millisecond of every turn and garbage for the GC.
const memorySearchParameters = z.object({
  query: z
    .string()
    .min(1)
    .describe("What to look for: keywords, an identifier such as OPS-4821, or a question."),
  maxResults: z.number().int().min(1).max(50).optional().describe("Most passages to return (default 8)."),
  minScore: z
    .number()
    .min(0)
    .max(1)
    .optional()
    .describe(
      "Drop passages scoring below this, 0-1 (default: keep every passage that shares a word with the query).",
    ),
});

const memoryGetSchemas = new Map<string, ReturnType<typeof buildMemoryGetParameters>>();

/** `memory_get`'s arguments for a scope's folder and line limits (one schema per distinct combination). */
function memoryGetParameters(shared: string | undefined, maxLines: number, defaultLines: number) {
  const key = `${shared ?? ""}\u0000${maxLines}\u0000${defaultLines}`;
  let schema = memoryGetSchemas.get(key);
  if (schema === undefined) {
    schema = buildMemoryGetParameters(shared, maxLines, defaultLines);
    if (memoryGetSchemas.size >= 256) memoryGetSchemas.clear();
    memoryGetSchemas.set(key, schema);
  }
  return schema;
}

function buildMemoryGetParameters(shared: string | undefined, maxLines: number, defaultLines: number) {
  return z.object({
    path: z
      .string()
      .min(1)
      .describe(
        shared === undefined
          ? "MEMORY.md or memory/..., relative to the workspace."
          : `${shared}..., relative to the workspace.`,
      ),
    fromLine: z.number().int().min(1).optional().describe("First line to read, 1-based (default 1)."),
    lines: z
      .number()
      .int()
      .min(1)
      .max(maxLines)
      .optional()
      .describe(`How many lines (default ${defaultLines}).`),
  });
}

/** What both tools work with, resolved once per toolkit from {@link MemoryToolsOptions}. */
interface ToolSettings {
  readonly search: MemorySearch;
  readonly workspace: string;
  readonly scope: MemoryScope;
  readonly paths: ScopePathFilter;
  /** The shared chat's folder (`shared/...`), or undefined in the owner's scope. */
  readonly shared: string | undefined;
  readonly defaultLines: number;
  readonly maxLines: number;
  /** Whether a result fits the output budget. */
  readonly fits: (text: string) => boolean;
}

/**
 * The memory tools for the agent: `memory_search` (hybrid search over the scope's files: MEMORY.md and
 * memory/ for the owner, its own log folder for a shared chat) and `memory_get` (read lines of one of
 * them). Both answer problems as tool errors the model can act on; they never throw.
 */
export function createMemoryTools(options: MemoryToolsOptions): Tool[] {
  const settings = toolSettings(options);
  return [memorySearchTool(settings), memoryGetTool(settings)];
}

/** The options with their defaults filled in, and the scope's path filter and output budget worked out. */
function toolSettings(options: MemoryToolsOptions): ToolSettings {
  const scope = options.scope ?? OWNER_SCOPE;
  const budget = options.maxOutputTokens;
  const count = options.countTokens ?? ((text: string) => Math.ceil(text.length / 2));
  return {
    search: options.search,
    workspace: options.workspace,
    scope,
    paths: scopePathFilter(scope),
    shared: scope.kind === "shared" ? sharedScopePrefix(scope) : undefined,
    defaultLines: options.defaultGetLines ?? 200,
    maxLines: options.maxGetLines ?? 1000,
    fits: (text) => budget === undefined || count(text) <= budget,
  };
}

/** `memory_search`: the scope's passages for a query, as many as fit the output budget. */
function memorySearchTool(settings: ToolSettings) {
  return defineTool({
    name: "memory_search",
    description:
      (settings.shared === undefined
        ? "Search long-term memory (MEMORY.md and the notes and daily logs in memory/) for facts, decisions, "
        : `Search this chat's own log (${settings.shared}) for facts, decisions, `) +
      "people, ticket ids and past conversations. Returns the best matching passages, best first, with their " +
      "file path, line range and date (a daily log's day, or when the file was last changed): when passages " +
      "disagree, the newest one is current. Use memory_get to read more around a hit.",
    parameters: memorySearchParameters,
    async execute(args, context) {
      try {
        return await searchWithinBudget(settings, args, context.signal);
      } catch (error) {
        return failure(`memory_search failed: ${describeError(error)}`);
      }
    },
  });
}

type MemorySearchArguments = z.output<typeof memorySearchParameters>;

/** One search's response and the note the model reads with it. */
interface SearchPage {
  readonly response: MemorySearchResponse;
  readonly note: string | undefined;
}

/**
 * Searches and renders the passages within the output budget: first fewer passages, then shorter snippets
 * (each still centred on its best-matching line), best hit always first.
 */
async function searchWithinBudget(
  settings: ToolSettings,
  args: MemorySearchArguments,
  signal: AbortSignal,
): Promise<string> {
  let page = await searchPage(settings, args, signal);
  const total = page.response.results.length;
  let output = renderPage(page, total, 0);
  if (settings.fits(output)) return output;
  for (let kept = total - 1; kept >= Math.min(total, RESULTS_BEFORE_SHRINKING); kept -= 1) {
    output = renderPage(page, kept, total - kept);
    if (settings.fits(output)) return output;
  }
  for (const snippetChars of SHRINKING_SNIPPETS) {
    page = await searchPage(settings, args, signal, snippetChars);
    for (let kept = Math.min(total, RESULTS_BEFORE_SHRINKING); kept >= 1; kept -= 1) {
      output = renderPage(page, kept, total - kept);
      if (settings.fits(output)) return output;
    }
  }
  return output;
}

/** One search in the scope, with a hint to try other words when nothing matched. */
async function searchPage(
  settings: ToolSettings,
  args: MemorySearchArguments,
  signal: AbortSignal,
  snippetChars?: number,
): Promise<SearchPage> {
  const response = await settings.search.search(args.query, {
    signal,
    paths: settings.paths,
    ...(args.maxResults === undefined ? {} : { maxResults: args.maxResults }),
    ...(args.minScore === undefined ? {} : { minScore: args.minScore }),
    ...(snippetChars === undefined ? {} : { snippetChars }),
  });
  const note =
    response.results.length === 0
      ? [
          response.note,
          "Nothing in memory shares a word with the query; try other words (a synonym, a name, an id).",
        ]
          .filter((part) => part !== undefined)
          .join(" ")
      : response.note;
  return { response, note };
}

/** The first `kept` passages of a page as the tool's JSON, saying how many more were left out. */
function renderPage({ response, note }: SearchPage, kept: number, omitted: number): string {
  return JSON.stringify(
    {
      mode: response.mode,
      ...(note === undefined ? {} : { note }),
      ...(omitted > 0
        ? { omitted: `${omitted} more passages left out to fit the context; search narrower for them.` }
        : {}),
      results: response.results
        .slice(0, kept)
        .map(({ path: file, startLine, endLine, date, score, source, snippet }) => ({
          path: file,
          startLine,
          endLine,
          date,
          score,
          source,
          snippet,
        })),
    },
    null,
    2,
  );
}

/** `memory_get`: lines of one of the scope's files, as many as fit the output budget. */
function memoryGetTool(settings: ToolSettings) {
  const { shared } = settings;
  return defineTool({
    name: "memory_get",
    description:
      shared === undefined
        ? "Read lines of a memory file: MEMORY.md or a file under memory/ (for example a path returned by memory_search)."
        : `Read lines of this chat's log, a file under ${shared} (for example a path returned by memory_search).`,
    parameters: memoryGetParameters(shared, settings.maxLines, settings.defaultLines),
    async execute(args) {
      const resolved = await resolveMemoryFile(settings, args.path);
      if ("isError" in resolved) return resolved;
      const { absolute, relative } = resolved;
      let text: string;
      try {
        text = await readFile(absolute, "utf8");
      } catch (error) {
        const code = errorCode(error);
        if (code === "ENOENT")
          return failure(`"${relative}" does not exist. Use memory_search to find the right file.`);
        if (code === "EISDIR") return failure(`"${relative}" is a directory; give a file path.`);
        return failure(`Cannot read "${relative}": ${describeError(error)}`);
      }
      return renderLines(settings, relative, text, args.fromLine ?? 1, args.lines ?? settings.defaultLines);
    },
  });
}

/**
 * The file `memory_get` was asked for, inside the workspace and the scope's files, or the tool error saying
 * why not (the check runs on the resolved path, whatever the model typed).
 */
async function resolveMemoryFile(
  { workspace, scope, shared }: ToolSettings,
  given: string,
): Promise<{ absolute: string; relative: string } | { content: string; isError: true }> {
  const requested = given.replaceAll("\\", "/").replace(/^(\.\/)+/u, "");
  let absolute: string;
  let relative: string;
  try {
    absolute = await resolveWorkspacePath(workspace, requested);
    relative = toRelativePath(await realpath(path.resolve(workspace)), absolute);
  } catch (error) {
    return failure(
      isAlmanacError(error) ? error.message : `Cannot resolve "${given}": ${describeError(error)}`,
    );
  }
  if (shared !== undefined && !isPathInScope(scope, relative)) {
    return failure(
      `In this chat memory_get reads only this chat's own log, files under ${shared}; "${given}" is not one. The owner's private memory is not available here.`,
    );
  }
  if (
    shared === undefined &&
    relative !== MEMORY_FILE &&
    !(isInMemoryDirectory(relative) && relative !== "memory")
  ) {
    return failure(`memory_get reads only ${MEMORY_FILE} and files under memory/; "${given}" is neither.`);
  }
  return { absolute, relative };
}

/** `count` lines of a file's text from line `from`, as `memory_get` returns them. */
function renderLines(
  { fits }: ToolSettings,
  relative: string,
  text: string,
  from: number,
  count: number,
): string | { content: string; isError: true } {
  const lines = text.split(/\r?\n/u);
  if (lines.at(-1) === "") lines.pop();
  if (lines.length === 0) return `${relative} is empty.`;
  if (from > lines.length) {
    return failure(`"${relative}" has ${lines.length} lines; fromLine ${from} is past the end.`);
  }
  let to = Math.min(lines.length, from - 1 + count);
  const render = () => {
    const more = to < lines.length ? ` (more follows: call again with fromLine ${to + 1})` : "";
    return `${relative} lines ${from}-${to} of ${lines.length}${more}:\n${lines.slice(from - 1, to).join("\n")}`;
  };
  // Over the output budget: fewer lines (at least one), and the model is told where to go on.
  let output = render();
  while (!fits(output) && to > from) {
    to = from - 1 + Math.max(1, Math.floor((to - from + 1) * 0.75));
    output = render();
  }
  return output;
}
