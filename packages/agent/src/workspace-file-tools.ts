import { appendFile, readdir, stat } from "node:fs/promises";
import * as path from "node:path";
import { UserError } from "@almanac/core";
import { makeDirectoriesBelow, PRIVATE_FILE_MODE, writeFileDurably } from "@almanac/durable-write";
import { z } from "zod";
import { positiveInteger } from "./positive-integer.js";
import { defineTool, type Tool } from "./toolkit.js";
import {
  notAFileError,
  notFoundError,
  readTextFile,
  resolveTarget,
  shownPath,
  splitLines,
  toWorkspaceError,
  type WorkspaceTarget,
} from "./workspace-fs.js";

/** Options of {@link createWorkspaceFileTools}. */
export interface WorkspaceFileToolsOptions {
  /** The workspace directory; every path the model gives is resolved inside it. */
  readonly root: string;
  /** Most lines one `read_file` call returns. Default 2000. */
  readonly maxReadLines?: number;
  /** Most entries one `list_files` call returns. Default 1000. */
  readonly maxListEntries?: number;
  /**
   * Replaces how a whole file is written (default: atomic write). The server routes memory files
   * (`MEMORY.md`, `memory/**`) through its write-safe store here: backups, shrink guard. When set,
   * `append_file` reads the file and writes it whole through this function too. Errors it throws reach
   * the model as tool errors.
   */
  readonly writeText?: (
    target: { readonly absolute: string; readonly shown: string },
    content: string,
  ) => Promise<void>;
  /**
   * Replaces how a whole file is read by `read_file`, `edit_file` and `append_file` (default: the file system,
   * refusing binary files). Paired with `writeText`, it lets the server notice that a person changed a
   * memory file between the agent's read and its write.
   */
  readonly readText?: (target: WorkspaceTarget) => Promise<string>;
}

const pathField = z.string().describe("Path relative to the workspace root, e.g. notes/todo.md");

function describeSize(text: string): string {
  const lines = splitLines(text).length;
  return `${lines} ${lines === 1 ? "line" : "lines"}, ${text.length} characters`;
}

async function existingKind(target: WorkspaceTarget): Promise<"file" | "directory" | "missing"> {
  try {
    return (await stat(target.absolute)).isDirectory() ? "directory" : "file";
  } catch (error) {
    const mapped = toWorkspaceError(error, target.shown);
    if (mapped instanceof UserError && mapped.code === "workspace.not_found") return "missing";
    throw mapped;
  }
}

async function ensureParent(target: WorkspaceTarget): Promise<void> {
  try {
    // Never the root itself: a workspace that vanished is "not found", not made again empty.
    await makeDirectoriesBelow(target.realRoot, path.dirname(target.absolute));
  } catch (error) {
    throw toWorkspaceError(error, target.shown);
  }
}

/** Start offsets of the non-overlapping occurrences of `needle` in `text`. */
function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + needle.length)) {
    found.push(index);
  }
  return found;
}

/** Replaces at the given offsets by slicing (String.replace would interpret `$&` and friends in new text). */
function replaceAt(text: string, starts: readonly number[], length: number, replacement: string): string {
  let result = "";
  let cursor = 0;
  for (const start of starts) {
    result += text.slice(cursor, start) + replacement;
    cursor = start + length;
  }
  return result + text.slice(cursor);
}

// The tools' argument schemas are built once, not with every toolkit: the server makes a toolkit per turn, and
// building zod schemas each time was CPU on every turn and garbage for the GC.
const writeFileParameters = z.object({
  path: pathField,
  content: z.string().describe("The complete new content of the file."),
});

const editFileParameters = z.object({
  path: pathField,
  old_text: z.string().min(1).describe("The exact text to replace."),
  new_text: z.string().describe("The text to put in its place."),
  replace_all: z
    .boolean()
    .optional()
    .describe("Replace every occurrence instead of exactly one. Default false."),
});

const appendFileParameters = z.object({
  path: pathField,
  content: z
    .string()
    .describe("Text to add at the end, exactly as given (include a leading newline if needed)."),
});

const listFilesParameters = z.object({
  path: pathField.optional().describe("Directory relative to the workspace root. Default: the root."),
  recursive: z
    .boolean()
    .optional()
    .describe("Include everything below, not just direct entries. Default false."),
});

const readFileSchemas = new Map<number, ReturnType<typeof buildReadFileParameters>>();

/** `read_file`'s arguments for a line limit (its description names it). */
function readFileParameters(maxReadLines: number) {
  let schema = readFileSchemas.get(maxReadLines);
  if (schema === undefined) {
    schema = buildReadFileParameters(maxReadLines);
    if (readFileSchemas.size >= 64) readFileSchemas.clear();
    readFileSchemas.set(maxReadLines, schema);
  }
  return schema;
}

function buildReadFileParameters(maxReadLines: number) {
  return z.object({
    path: pathField,
    offset: z.number().int().min(1).optional().describe("First line to show, 1-based. Default 1."),
    limit: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(`How many lines to show. Default and maximum ${maxReadLines}.`),
  });
}

/** The options of one {@link createWorkspaceFileTools} call, resolved once and shared by its tools. */
interface ToolSettings {
  readonly root: string;
  readonly maxReadLines: number;
  readonly maxListEntries: number;
  readonly readText: (target: WorkspaceTarget) => Promise<string>;
  readonly writeText: (target: WorkspaceTarget, content: string) => Promise<void>;
  /** The caller's own `writeText`, if any: `append_file` then writes the whole file instead of appending. */
  readonly customWriteText: WorkspaceFileToolsOptions["writeText"];
}

/**
 * The workspace file tools: `read_file`, `write_file`, `edit_file`, `append_file` and `list_files`.
 * Every path goes through {@link resolveWorkspacePath}; failures become tool error results, never crashes.
 */
export function createWorkspaceFileTools(options: WorkspaceFileToolsOptions): Tool[] {
  const settings: ToolSettings = {
    root: options.root,
    maxReadLines: positiveInteger(options.maxReadLines, 2000, "createWorkspaceFileTools: maxReadLines"),
    maxListEntries: positiveInteger(options.maxListEntries, 1000, "createWorkspaceFileTools: maxListEntries"),
    readText: options.readText ?? readTextFile,
    writeText:
      options.writeText ??
      ((target: { readonly absolute: string }, content: string) =>
        writeFileDurably(target.absolute, content)),
    customWriteText: options.writeText,
  };
  return [
    readFileTool(settings),
    writeFileTool(settings),
    editFileTool(settings),
    appendFileTool(settings),
    listFilesTool(settings),
  ];
}

function readFileTool({ root, maxReadLines, readText }: ToolSettings) {
  return defineTool({
    name: "read_file",
    description: `Read a text file in the workspace. Shows at most ${maxReadLines} lines per call; use offset and limit to page through longer files.`,
    parameters: readFileParameters(maxReadLines),
    async execute({ path: requested, offset = 1, limit }) {
      const target = await resolveTarget(root, requested);
      const lines = splitLines(await readText(target));
      if (lines.length === 0) return `[${target.shown} is empty: 0 lines]`;
      if (offset > lines.length) {
        return {
          content: `offset ${offset} is past the end of ${target.shown}, which has ${lines.length} lines.`,
          isError: true,
        };
      }
      const count = Math.min(limit ?? maxReadLines, maxReadLines);
      const end = Math.min(lines.length, offset + count - 1);
      const header = `[${target.shown}: lines ${offset}-${end} of ${lines.length}]`;
      const body = lines.slice(offset - 1, end).join("\n");
      const rest = lines.length - end;
      const footer =
        rest > 0
          ? `\n[${rest} more ${rest === 1 ? "line" : "lines"}: call read_file with offset ${end + 1} to read on]`
          : "";
      return `${header}\n${body}${footer}`;
    },
  });
}

function writeFileTool({ root, writeText }: ToolSettings) {
  return defineTool({
    name: "write_file",
    description:
      "Create or overwrite a text file in the workspace with the given content. Parent directories are created.",
    parameters: writeFileParameters,
    async execute({ path: requested, content }) {
      const target = await resolveTarget(root, requested);
      const kind = await existingKind(target);
      if (kind === "directory") throw notAFileError(target.shown);
      await ensureParent(target);
      try {
        await writeText(target, content);
      } catch (error) {
        throw toWorkspaceError(error, target.shown);
      }
      return `Wrote ${target.shown} (${describeSize(content)}; ${kind === "missing" ? "created" : "replaced"}).`;
    },
  });
}

function editFileTool({ root, readText, writeText }: ToolSettings) {
  return defineTool({
    name: "edit_file",
    description:
      "Replace exact text in a workspace file. old_text must match the file exactly (whitespace and line breaks included) and occur once, unless replace_all is true.",
    parameters: editFileParameters,
    async execute({
      path: requested,
      old_text: oldText,
      new_text: newText,
      replace_all: replaceAll = false,
    }) {
      const target = await resolveTarget(root, requested);
      const text = await readText(target);
      const found = occurrences(text, oldText);
      if (found.length === 0) {
        return {
          content: `old_text was not found in ${target.shown}. It must match exactly, including whitespace and line breaks; read the file and copy the text.`,
          isError: true,
        };
      }
      if (found.length > 1 && !replaceAll) {
        return {
          content: `old_text occurs ${found.length} times in ${target.shown}. Include more surrounding text so it matches once, or set replace_all to true.`,
          isError: true,
        };
      }
      if (oldText === newText)
        return { content: "old_text and new_text are the same; nothing changed.", isError: true };
      try {
        await writeText(target, replaceAt(text, found, oldText.length, newText));
      } catch (error) {
        throw toWorkspaceError(error, target.shown);
      }
      return `Edited ${target.shown}: replaced ${found.length} ${found.length === 1 ? "occurrence" : "occurrences"}.`;
    },
  });
}

function appendFileTool({ root, readText, customWriteText }: ToolSettings) {
  return defineTool({
    name: "append_file",
    description:
      "Append text to the end of a workspace file, creating the file (and its directories) if missing.",
    parameters: appendFileParameters,
    async execute({ path: requested, content }) {
      const target = await resolveTarget(root, requested);
      const kind = await existingKind(target);
      await ensureParent(target);
      try {
        if (customWriteText) {
          const existing = kind === "missing" ? "" : await readText(target);
          await customWriteText(target, existing + content);
        } else {
          await appendFile(target.absolute, content, { encoding: "utf8", mode: PRIVATE_FILE_MODE });
        }
      } catch (error) {
        throw toWorkspaceError(error, target.shown);
      }
      return `Appended ${content.length} characters to ${target.shown}${kind === "missing" ? " (file created)" : ""}.`;
    },
  });
}

function listFilesTool({ root, maxListEntries }: ToolSettings) {
  return defineTool({
    name: "list_files",
    description: `List a workspace directory (directories end with "/"). Recursive listing stops after ${maxListEntries} entries.`,
    parameters: listFilesParameters,
    async execute({ path: requested = ".", recursive = false }) {
      const target = await resolveTarget(root, requested);
      const kind = await existingKind(target);
      if (kind === "missing") throw notFoundError(target.shown);
      if (kind === "file") {
        return {
          content: `"${target.shown}" is a file, not a directory. Use read_file to read it.`,
          isError: true,
        };
      }
      const listing: Listing = {
        realRoot: target.realRoot,
        recursive,
        maxEntries: maxListEntries,
        entries: [],
        truncated: false,
      };
      try {
        await visitDirectory(listing, target.absolute);
      } catch (error) {
        throw toWorkspaceError(error, target.shown);
      }
      if (listing.entries.length === 0) return `[${target.shown} is an empty directory]`;
      const note = listing.truncated
        ? `\n[listing stopped at ${maxListEntries} entries; list a subdirectory to see the rest]`
        : "";
      return `${listing.entries.join("\n")}${note}`;
    },
  });
}

/** One `list_files` call's walk: what it was asked and what it has found so far. */
interface Listing {
  readonly realRoot: string;
  readonly recursive: boolean;
  readonly maxEntries: number;
  readonly entries: string[];
  truncated: boolean;
}

/**
 * Adds `directory`'s entries to the listing. Depth first with sorted names, so a directory's contents follow
 * it. Symlinked directories are shown but not entered (no loops, and their targets are checked when read).
 */
async function visitDirectory(listing: Listing, directory: string): Promise<void> {
  const children = (await readdir(directory, { withFileTypes: true })).sort((a, b) =>
    // Code-unit order: the same on every machine, whatever its locale.
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const child of children) {
    if (listing.entries.length >= listing.maxEntries) {
      listing.truncated = true;
      return;
    }
    const absolute = path.join(directory, child.name);
    const shown = shownPath(listing.realRoot, absolute);
    listing.entries.push(child.isDirectory() ? `${shown}/` : shown);
    if (listing.recursive && child.isDirectory()) await visitDirectory(listing, absolute);
  }
}
