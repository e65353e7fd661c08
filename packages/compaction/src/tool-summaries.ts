import { z } from "zod";

/** What a one-line tool summary is built from. `arguments` is the call's parsed JSON (untrusted: check it). */
export interface ToolOutputFacts {
  readonly name: string;
  /** The parsed arguments, or `undefined` when they were not valid JSON or the call is unknown. */
  readonly arguments: unknown;
  readonly content: string;
  readonly isError: boolean;
}

/** Turns one old tool output into one line that says what it was (never the output itself). */
export type ToolSummarizer = (facts: ToolOutputFacts) => string;

/** One-liners by tool name; tools without an entry use {@link genericToolSummary}. */
export type ToolSummaryRegistry = Readonly<Record<string, ToolSummarizer>>;

const argumentsSchema = z.record(z.string(), z.unknown());

/** A string argument of the call, if the model sent one under that name. */
function stringArgument(facts: ToolOutputFacts, key: string): string | undefined {
  const parsed = argumentsSchema.safeParse(facts.arguments);
  if (!parsed.success) return undefined;
  const value = parsed.data[key];
  return typeof value === "string" ? value : undefined;
}

/** Parses a tool call's raw argument text without trusting it; `undefined` when it is not JSON. */
export function parseToolArguments(text: string): unknown {
  if (text.trim() === "") return {};
  try {
    const value: unknown = JSON.parse(text);
    return value;
  } catch {
    return undefined;
  }
}

const numberFormat = new Intl.NumberFormat("en-US");

function lineCount(text: string): number {
  if (text === "") return 0;
  let lines = 1;
  for (let index = text.indexOf("\n"); index !== -1; index = text.indexOf("\n", index + 1)) lines += 1;
  return lines;
}

/** At most `max` characters of the text's first non-empty line, on one line. */
export function firstLine(text: string, max = 100): string {
  const line =
    text
      .split("\n")
      .find((candidate) => candidate.trim() !== "")
      ?.trim() ?? "";
  const chars = Array.from(line);
  return chars.length <= max ? line : `${chars.slice(0, max).join("")}…`;
}

function size(text: string): string {
  const lines = lineCount(text);
  return `${numberFormat.format(lines)} ${lines === 1 ? "line" : "lines"}, ${numberFormat.format(text.length)} characters`;
}

function quoted(value: string | undefined, fallback: string): string {
  return value === undefined ? fallback : JSON.stringify(firstLine(value, 80));
}

function failed(facts: ToolOutputFacts, subject: string): string | undefined {
  return facts.isError ? `${facts.name} ${subject} failed: ${firstLine(facts.content)}` : undefined;
}

/** The fallback one-liner: tool name, size and how the output began. */
export const genericToolSummary: ToolSummarizer = (facts) =>
  failed(facts, "call") ??
  `${facts.name} returned ${size(facts.content)}; it began: ${JSON.stringify(firstLine(facts.content, 80))}`;

const readFile: ToolSummarizer = (facts) => {
  const path = quoted(stringArgument(facts, "path"), "a file");
  // read_file answers "[path: lines a-b of n]" first; keep that range, it tells what was seen.
  const range = /^\[[^\]\n]*: (lines \d+-\d+ of \d+)\]/.exec(facts.content)?.[1];
  return (
    failed(facts, `of ${path}`) ??
    `read_file ${path}${range === undefined ? "" : ` (${range})`} returned ${size(facts.content)}; read it again if the text is needed`
  );
};

const fileChange =
  (verb: string): ToolSummarizer =>
  (facts) => {
    const path = quoted(stringArgument(facts, "path"), "a file");
    return failed(facts, `on ${path}`) ?? `${facts.name} ${verb} ${path}: ${firstLine(facts.content)}`;
  };

const listFiles: ToolSummarizer = (facts) => {
  const path = quoted(stringArgument(facts, "path"), '"."');
  const entries = facts.content.split("\n").filter((line) => line.trim() !== "");
  const sample = entries.slice(0, 3).join(", ");
  return (
    failed(facts, `of ${path}`) ??
    `list_files ${path} listed ${numberFormat.format(entries.length)} entries (first: ${firstLine(sample, 80)})`
  );
};

const memorySearch: ToolSummarizer = (facts) => {
  const query = quoted(stringArgument(facts, "query"), "a query");
  return (
    failed(facts, `for ${query}`) ??
    `memory_search for ${query} returned ${size(facts.content)}; search again if the hits are needed`
  );
};

const memoryGet: ToolSummarizer = (facts) => {
  const target = quoted(
    stringArgument(facts, "path") ?? stringArgument(facts, "id") ?? stringArgument(facts, "key"),
    "a memory entry",
  );
  return (
    failed(facts, `of ${target}`) ??
    `memory_get ${target} returned ${size(facts.content)}; get it again if the text is needed`
  );
};

/** One-liners for Almanac's own tools (workspace files and memory). */
export const defaultToolSummaries: ToolSummaryRegistry = Object.freeze({
  read_file: readFile,
  write_file: fileChange("wrote"),
  edit_file: fileChange("edited"),
  append_file: fileChange("appended to"),
  list_files: listFiles,
  memory_search: memorySearch,
  memory_get: memoryGet,
});

/** Text that replaces an old tool output: marked as shortened, so the model knows the full text is gone. */
export function summarizeToolOutput(facts: ToolOutputFacts, registry: ToolSummaryRegistry): string {
  const summarizer = Object.hasOwn(registry, facts.name) ? registry[facts.name] : undefined;
  let line: string;
  try {
    line = (summarizer ?? genericToolSummary)(facts);
  } catch {
    // A faulty custom one-liner must not stop compaction; the generic one never throws.
    line = genericToolSummary(facts);
  }
  return `[Earlier tool output shortened to save context] ${firstLine(line, 300)}`;
}
