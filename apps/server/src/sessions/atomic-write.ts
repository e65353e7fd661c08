import { randomBytes } from "node:crypto";
import { open, readdir, rename, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

// Hand-rolled rather than write-file-atomic: that package fsyncs the file but not the directory (so a
// power loss right after the rename can lose it), and its temp names (`<file>.<number>`) are hard to tell
// apart from our own files when sweeping leftovers. Ours are `.<file>.<random>.tmp`: hidden, and never a
// session stem because stems never start with a dot.

const TEMP_FILE = /^\..+\.[0-9a-f]{16}\.tmp$/;

/** True when `name` is a temp file left by {@link writeFileAtomic} (e.g. after a crash). */
export function isAtomicTempFile(name: string): boolean {
  return TEMP_FILE.test(name);
}

/**
 * Replaces `path` with `data` so that readers (and a crash at any point) see either the old or the
 * new content: write a temp file in the same directory, fsync it, rename it over `path`, fsync the directory.
 * On failure the temp file is removed and the old content stays.
 */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tempPath = join(dirname(path), `.${basename(path)}.${randomBytes(8).toString("hex")}.tmp`);
  let renamed = false;
  try {
    const handle = await open(tempPath, "wx", 0o600);
    try {
      await handle.writeFile(data, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tempPath, path);
    renamed = true;
    await fsyncDirectory(dirname(path));
  } finally {
    if (!renamed) await unlink(tempPath).catch(() => {});
  }
}

/**
 * Flushes a directory's entries (creations, renames, removals) to disk.
 * Windows cannot open a directory for fsync; there the rename is as durable as the OS makes it.
 */
export async function fsyncDirectory(dir: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch (error) {
    if (!isErrnoCode(error, "EISDIR", "EPERM", "EINVAL", "EACCES")) throw error;
  } finally {
    await handle?.close();
  }
}

/** Removes temp files left in `dir` by interrupted {@link writeFileAtomic} calls; returns their names. */
export async function removeStaleTempFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter(isAtomicTempFile);
  await Promise.all(names.map((name) => unlink(join(dir, name)).catch(() => {})));
  return names;
}

/** True when `error` is a Node system error with one of the given `code`s (e.g. `ENOENT`). */
export function isErrnoCode(error: unknown, ...codes: string[]): boolean {
  if (typeof error !== "object" || error === null || !("code" in error)) return false;
  return typeof error.code === "string" && codes.includes(error.code);
}
