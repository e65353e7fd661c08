import { readFile, realpath } from "node:fs/promises";
import * as path from "node:path";
import { UserError } from "@almanac/core";
import { resolveWorkspacePath } from "./workspace-path.js";

/** A path the model gave, resolved inside the workspace, with the form to show back to the model. */
export interface WorkspaceTarget {
  /** Real absolute path to operate on. */
  readonly absolute: string;
  /** Path relative to the workspace root with `/` separators (`.` for the root itself). */
  readonly shown: string;
  /** Real absolute path of the workspace root. */
  readonly realRoot: string;
}

/** Resolves a model-given path and computes how to name it in tool output. */
export async function resolveTarget(root: string, requestedPath: string): Promise<WorkspaceTarget> {
  const absolute = await resolveWorkspacePath(root, requestedPath);
  const realRoot = await realpath(path.resolve(root));
  return { absolute, shown: shownPath(realRoot, absolute), realRoot };
}

/** A path relative to the root, as the model should write it next time. */
export function shownPath(realRoot: string, absolute: string): string {
  const relative = path.relative(realRoot, absolute);
  return relative === "" ? "." : relative.split(path.sep).join("/");
}

function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** The error for a path that does not exist. */
export function notFoundError(shown: string, cause?: unknown): UserError {
  return new UserError(
    "workspace.not_found",
    `"${shown}" does not exist. Use list_files to see what exists.`,
    {
      cause,
    },
  );
}

/** The error for a directory where a file was expected. */
export function notAFileError(shown: string, cause?: unknown): UserError {
  return new UserError(
    "workspace.not_a_file",
    `"${shown}" is a directory, not a file. Use list_files on it.`,
    {
      cause,
    },
  );
}

/**
 * Turns a file-system error into a `UserError` the model can act on, naming the path as the model
 * knows it (absolute server paths stay out of tool results). Other errors pass through unchanged.
 */
export function toWorkspaceError(error: unknown, shown: string): unknown {
  switch (errorCode(error)) {
    case "ENOENT":
      return notFoundError(shown, error);
    case "EISDIR":
      return notAFileError(shown, error);
    case "ENOTDIR":
      return new UserError(
        "workspace.not_a_directory",
        `"${shown}" goes through a file as if it were a directory.`,
        {
          cause: error,
        },
      );
    case "EACCES":
    case "EPERM":
      return new UserError("workspace.permission_denied", `Permission denied for "${shown}".`, {
        cause: error,
      });
    default:
      return error;
  }
}

/** Reads a text file, refusing binary files (a NUL byte near the start) with a clear error. */
export async function readTextFile(target: WorkspaceTarget): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(target.absolute);
  } catch (error) {
    throw toWorkspaceError(error, target.shown);
  }
  if (bytes.subarray(0, 8192).includes(0)) {
    throw new UserError(
      "workspace.binary_file",
      `"${target.shown}" looks like a binary file; only text files can be read.`,
    );
  }
  return bytes.toString("utf8");
}

/** Splits text into lines; a final newline ends the last line instead of starting an empty one. */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}
