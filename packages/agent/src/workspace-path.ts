import { lstat, readlink, realpath } from "node:fs/promises";
import * as path from "node:path";
import { UserError } from "@almanac/core";

/** How many symlinks one path may pass through before we call it a loop (Linux's own limit). */
const maxSymlinkHops = 40;

function refuse(requestedPath: string, why: string): UserError {
  return new UserError("workspace.path_outside", `Path "${requestedPath}" is not allowed: ${why}.`);
}

function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return (
    relative === "" ||
    (!relative.startsWith(`..${path.sep}`) && relative !== ".." && !path.isAbsolute(relative))
  );
}

/**
 * The real path `target` leads to, following every symlink, including dangling ones
 * (a symlink to a file that does not exist yet would be followed by a write).
 */
async function realTarget(target: string, hops: number, requestedPath: string): Promise<string> {
  if (hops > maxSymlinkHops) throw refuse(requestedPath, "it passes through too many symlinks (a loop?)");
  try {
    return await realpath(target);
  } catch (error) {
    const code = errorCode(error);
    if (code === "ELOOP") throw refuse(requestedPath, "it passes through a symlink loop");
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  const parent = path.dirname(target);
  if (parent === target) return target;
  let stats: Awaited<ReturnType<typeof lstat>> | undefined;
  try {
    stats = await lstat(target);
  } catch (error) {
    const code = errorCode(error);
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  if (stats?.isSymbolicLink()) {
    const link = await readlink(target);
    return realTarget(path.resolve(path.dirname(target), link), hops + 1, requestedPath);
  }
  // Does not exist (yet): its real place is its parent's real place plus its own name.
  return path.join(await realTarget(parent, hops, requestedPath), path.basename(target));
}

/**
 * Resolves a path the model asked for inside the workspace `root`, returning its real absolute path.
 * Refuses with `UserError` code `workspace.path_outside`: absolute paths, NUL bytes, `..` escapes, and
 * symlinks (of the file or any parent) whose target leaves the root. Paths that do not exist yet are
 * checked through their deepest existing ancestor, so they can be created safely.
 */
export async function resolveWorkspacePath(root: string, requestedPath: string): Promise<string> {
  if (requestedPath.includes("\0"))
    throw refuse(requestedPath.replaceAll("\0", "\\0"), "it contains a NUL byte");
  if (path.isAbsolute(requestedPath) || path.win32.isAbsolute(requestedPath)) {
    throw refuse(requestedPath, "absolute paths are refused; give a path relative to the workspace root");
  }
  const absoluteRoot = path.resolve(root);
  const lexical = path.resolve(absoluteRoot, requestedPath);
  if (!isInside(absoluteRoot, lexical)) throw refuse(requestedPath, "it leaves the workspace root");

  let realRoot: string;
  try {
    realRoot = await realpath(absoluteRoot);
  } catch (error) {
    throw new UserError("workspace.root_missing", `The workspace root "${root}" does not exist.`, {
      cause: error,
    });
  }
  const real = await realTarget(path.join(realRoot, path.relative(absoluteRoot, lexical)), 0, requestedPath);
  if (!isInside(realRoot, real)) {
    throw refuse(requestedPath, "it goes through a symlink that points outside the workspace");
  }
  return real;
}
