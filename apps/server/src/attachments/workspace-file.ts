import { constants } from "node:fs";
import { open, realpath } from "node:fs/promises";
import { relative, sep } from "node:path";
import { resolveWorkspacePath } from "@almanac/agent";
import { errnoCode, UserError } from "@almanac/core";
import { type MemoryScope, sharedScopePrefix } from "@almanac/memory-files";
import { formatBytes } from "../runtime/turn-input.js";
import { detectFileType, type TypeCheck } from "./detect-type.js";

/** A workspace file read to be sent or shown: where it really is, its bytes, and its type by content. */
export interface WorkspaceFile {
  /** Its real path relative to the workspace, `/`-separated (links followed). */
  readonly path: string;
  /** Its file name (the last segment of {@link path}). */
  readonly name: string;
  readonly bytes: Buffer;
  /** The type read from the bytes, or why the inbox would refuse such a file. */
  readonly type: TypeCheck;
}

function notFound(requestedPath: string, cause?: unknown): UserError {
  return new UserError("workspace.not_found", `"${requestedPath}" does not exist in the workspace.`, {
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Reads a file of the workspace for a conversation of `scope`: the one rule of what the assistant may send
 * (`send_file`) and the console may fetch (`GET /api/files/content`). The path is resolved inside the workspace
 * (no absolute path, no `..` out of it, no link leading out of it: the data directory's state and transcripts are
 * out of reach), and a shared chat reaches only its own folder (`shared/<scope folder>/`, where its inbox is),
 * never the owner's files. At most `maxBytes` are read (`ALMANAC_ATTACHMENT_MAX_MB`); the type comes from the bytes.
 * Throws a `UserError`: `workspace.path_outside`, `workspace.not_found`, `workspace.not_a_file`, `file.too_large`.
 */
export async function readWorkspaceFile(
  workspace: string,
  scope: MemoryScope,
  requestedPath: string,
  maxBytes: number,
): Promise<WorkspaceFile> {
  const absolute = await resolveWorkspacePath(workspace, requestedPath);
  const path = relative(await realpath(workspace), absolute)
    .split(sep)
    .join("/");
  if (scope.kind === "shared" && !path.startsWith(sharedScopePrefix(scope)))
    throw new UserError(
      "workspace.path_outside",
      `"${requestedPath}" is not in this chat's own folder (${sharedScopePrefix(scope)}): a shared chat can only send files from there.`,
    );
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    // The path is real already: a link put in its place since then is not followed.
    handle = await open(absolute, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") throw notFound(requestedPath, error);
    if (code === "ELOOP")
      throw new UserError("workspace.path_outside", `"${requestedPath}" became a link; it was not read.`, {
        cause: error,
      });
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile())
      throw new UserError("workspace.not_a_file", `"${requestedPath}" is a folder, not a file.`);
    if (info.size > maxBytes) throw tooLarge(requestedPath, info.size, maxBytes);
    const bytes = await handle.readFile();
    // It may have grown between the check and the read.
    if (bytes.length > maxBytes) throw tooLarge(requestedPath, bytes.length, maxBytes);
    return { path, name: path.slice(path.lastIndexOf("/") + 1), bytes, type: await detectFileType(bytes) };
  } finally {
    await handle.close();
  }
}

function tooLarge(requestedPath: string, size: number, maxBytes: number): UserError {
  return new UserError(
    "file.too_large",
    `"${requestedPath}" is larger than ${formatBytes(maxBytes)} (${formatBytes(size)}), the most this server sends (ALMANAC_ATTACHMENT_MAX_MB).`,
  );
}
