import { statSync } from "node:fs";
import { lstat, readFile } from "node:fs/promises";
import { isErrnoCode } from "@almanac/core";

/** Reads a UTF-8 file; `undefined` when it does not exist (other errors are thrown). */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    // A missing file (a new session's snapshot) is answered without the thread pool: see `isMissing`.
    if (isMissing(path)) return undefined;
    return await readFile(path, "utf8");
  } catch (error) {
    if (isErrnoCode(error, "ENOENT")) return undefined;
    throw error;
  }
}

/**
 * True when nothing is at `path`, asked blocking: a lookup in the kernel's directory cache needs no trip through
 * libuv's thread pool, where it would wait behind every fsync queued before it (many sessions starting at once
 * queue hundreds), and each new session looks up its snapshot and its transcript before its first model call. A file created right after this answer is read by the next call, as if it had
 * come a moment later; one removed right after it is still reported missing by the read itself.
 */
export function isMissing(path: string): boolean {
  return statSync(path, { throwIfNoEntry: false }) === undefined;
}

/** True when something (file, directory, even a dangling link) is at `path`. */
export async function pathExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if (isErrnoCode(error, "ENOENT")) return false;
    throw error;
  }
}

/**
 * The first set of paths built with suffix "", "-1", "-2", ... of which none exists yet, so that moving
 * files there never overwrites an earlier copy (e.g. two corrupt snapshots moved aside in the same millisecond).
 */
export async function firstFreePaths(candidates: (suffix: string) => string[]): Promise<string[]> {
  for (let attempt = 0; ; attempt += 1) {
    const paths = candidates(attempt === 0 ? "" : `-${attempt}`);
    const taken = await Promise.all(paths.map(pathExists));
    if (!taken.some(Boolean)) return paths;
  }
}

/** `2025-01-02T03-04-05-678Z`: an ISO time without `:` or `.`, safe in file names everywhere. */
export function fileTimestamp(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace(/[:.]/g, "-");
}
