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
  const staged = await stageFileAtomic(path, data);
  await staged.publish({ syncDirectory: true });
}

/** A temp file written and fsynced by {@link stageFileAtomic}, not yet in place. */
export interface StagedFile {
  /**
   * Renames the temp file over its target. `syncDirectory` also fsyncs the directory, so the rename itself
   * survives a power loss (without it a power loss may leave the previous version, whole, in place).
   */
  publish(options: { readonly syncDirectory: boolean }): Promise<void>;
  /** Removes the temp file; the target keeps its old content. */
  discard(): Promise<void>;
}

/**
 * The first half of {@link writeFileAtomic}: the new content in a temp file beside `path`, fsynced, so a caller
 * can wait for it together with another fsync and publish it only when both succeeded.
 */
export async function stageFileAtomic(path: string, data: string): Promise<StagedFile> {
  const tempPath = join(dirname(path), `.${basename(path)}.${randomBytes(8).toString("hex")}.tmp`);
  const discard = () => unlink(tempPath).catch(() => {});
  try {
    const handle = await open(tempPath, "wx", 0o600);
    try {
      await handle.writeFile(data, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    await discard();
    throw error;
  }
  return {
    async publish({ syncDirectory }) {
      try {
        await rename(tempPath, path);
      } catch (error) {
        await discard();
        throw error;
      }
      if (syncDirectory) await fsyncDirectory(dirname(path));
    },
    discard,
  };
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
