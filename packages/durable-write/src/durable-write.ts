import { randomBytes } from "node:crypto";
import { type FileHandle, mkdir, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { groupCalls, isErrnoCode } from "@almanac/core";

// The one durable write for every file Almanac replaces (snapshots, memory files, the summarizer journal,
// workspace files, the admin token, the dedup log). Hand-rolled rather than write-file-atomic: measured
// (strace of write-file-atomic 7.0.1 with `fsync: true`), that package fsyncs the temp file and renames it
// but never fsyncs the directory, so a power loss right after the rename can bring the old file back; and its
// temp names (`<file>.<number>`) cannot be told apart from our own files when sweeping leftovers. Ours are
// `.<file>.<16 hex>.tmp`: hidden (file watchers and memory listings skip dot files), never a session stem
// (stems never start with a dot) and never a Markdown file.

const TEMP_FILE = /^\..+\.[0-9a-f]{16}\.tmp$/;

/** True when `name` is a temp file left by {@link writeFileDurably} (e.g. after a crash). */
export function isDurableWriteTempFile(name: string): boolean {
  return TEMP_FILE.test(name);
}

/** Mode of a file Almanac creates in its data directory: it holds a person's private memory, so theirs alone. */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of a directory Almanac creates in its data directory (see {@link PRIVATE_FILE_MODE}). */
export const PRIVATE_DIRECTORY_MODE = 0o700;

/** Options of {@link writeFileDurably} and {@link stageFileDurably}. */
export interface DurableWriteOptions {
  /**
   * Permission bits of the written file, applied exactly (not masked by the umask). Default: the bits of the
   * file being replaced, or {@link PRIVATE_FILE_MODE} for a new file, whatever the umask.
   */
  readonly mode?: number;
  /**
   * Also fsync the directory after the rename, so the rename itself survives a power loss. Default `true`;
   * without it a power loss may leave the previous version, whole, in place.
   */
  readonly syncDirectory?: boolean;
}

/**
 * Replaces `path` with `data` so that readers (and a crash at any moment) see either the old or the new
 * content, never a mix: a temp file in the same directory, fsynced, renamed over `path`, then the directory
 * fsynced. On failure the temp file is removed, the old content stays, and the error thrown is the Node system
 * error itself (its `code`, `syscall` and `path` intact), so callers keep mapping errnos such as ENOSPC or EACCES.
 * The parent directory must exist.
 */
export async function writeFileDurably(
  path: string,
  data: string | Uint8Array,
  options: DurableWriteOptions = {},
): Promise<void> {
  const staged = await stageFileDurably(path, data, options);
  await staged.publish({ syncDirectory: options.syncDirectory ?? true });
}

/** A temp file written and fsynced by {@link stageFileDurably}, not yet in place. */
export interface StagedFile {
  /** Renames the temp file over its target; `syncDirectory` also fsyncs the directory (see {@link DurableWriteOptions}). */
  publish(options: { readonly syncDirectory: boolean }): Promise<void>;
  /** Removes the temp file; the target keeps its old content. */
  discard(): Promise<void>;
}

/**
 * The first half of {@link writeFileDurably}: the new content in a temp file beside `path`, fsynced, so a caller
 * can wait for it together with another fsync and publish it only when both succeeded.
 */
export async function stageFileDurably(
  path: string,
  data: string | Uint8Array,
  options: Pick<DurableWriteOptions, "mode"> = {},
): Promise<StagedFile> {
  const tempPath = join(dirname(path), `.${basename(path)}.${randomBytes(8).toString("hex")}.tmp`);
  const discard = () => unlink(tempPath).catch(() => {});
  const mode = options.mode ?? (await existingMode(path)) ?? PRIVATE_FILE_MODE;
  let handle: FileHandle | undefined;
  try {
    handle = await open(tempPath, "wx", mode);
    await handle.writeFile(data);
    // The umask may have taken bits off the mode the file was created with.
    if (((await handle.stat()).mode & 0o7777) !== mode) await handle.chmod(mode);
    await handle.sync();
    const written = handle;
    handle = undefined;
    await written.close();
  } catch (error) {
    // The error reported is the write's, not the close's.
    await handle?.close().catch(() => {});
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

async function existingMode(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).mode & 0o7777;
  } catch (error) {
    if (isErrnoCode(error, "ENOENT")) return undefined;
    throw error;
  }
}

/**
 * Flushes a directory's entries (creations, renames, removals) to disk, so a rename or a new file inside it
 * survives a power cut. Platforms that cannot fsync a directory (Windows, some file systems: EISDIR, EPERM,
 * EINVAL, EACCES, ENOTSUP) are tolerated: the rename is still atomic there, only its durability is up to the OS.
 *
 * Calls for one directory are committed in groups ({@link groupCalls}): a call made while that directory's fsync
 * runs waits for it and then for one more, which every call made meanwhile shares (an fsync started after a
 * caller's change covers it; one already running may not). 100 sessions starting at once created 100
 * transcripts in one directory and fsynced it 100 times, one ext4 journal commit each.
 */
export function fsyncDirectory(directory: string): Promise<void> {
  return fsyncDirectoryInGroups(directory);
}

const fsyncDirectoryInGroups = groupCalls(syncDirectoryNow);

async function syncDirectoryNow(directory: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(directory, "r");
    await handle.sync();
  } catch (error) {
    if (!isErrnoCode(error, "EISDIR", "EPERM", "EINVAL", "EACCES", "ENOTSUP")) throw error;
  } finally {
    await handle?.close();
  }
}

/**
 * Makes one directory (private mode) inside a parent that must exist; resolves `true` when it made it, `false` when
 * it was there. Never recursive: a data directory that vanished while the server runs is reported (ENOENT), not
 * made again as an empty shell by whichever component writes next.
 */
export async function makeDirectoryIn(directory: string): Promise<boolean> {
  try {
    await mkdir(directory, { mode: PRIVATE_DIRECTORY_MODE });
    return true;
  } catch (error) {
    if (isErrnoCode(error, "EEXIST")) return false;
    throw error;
  }
}

/**
 * Makes `target` and the directories between `root` and it (private mode), never `root` or anything above it: if
 * `root` vanished (a data directory moved or an unmounted volume), the ENOENT is thrown and nothing is made. For
 * writers whose folders nest inside a root (workspace files, attachment inboxes, memory files): `mkdir -p` would
 * make an empty copy of the whole path. `target` may be `root` itself (nothing is made; it must exist). One syscall
 * when `target` exists.
 */
export async function makeDirectoriesBelow(root: string, target: string): Promise<void> {
  const path = relative(root, target);
  if (path === ".." || path.startsWith(`..${sep}`) || isAbsolute(path))
    throw new Error(`makeDirectoriesBelow: ${target} is not below ${root}`);
  if (path === "") {
    await stat(root);
    return;
  }
  try {
    await mkdir(target, { mode: PRIVATE_DIRECTORY_MODE });
    return;
  } catch (error) {
    if (isErrnoCode(error, "EEXIST")) return;
    if (!isErrnoCode(error, "ENOENT")) throw error;
  }
  // A folder between them is missing: made from the root down, each inside one that must exist.
  let current = root;
  for (const part of path.split(sep)) {
    current = join(current, part);
    await makeDirectoryIn(current);
  }
}

/** Removes temp files left in `directory` by interrupted {@link writeFileDurably} calls; returns their names. */
export async function removeStaleTempFiles(directory: string): Promise<string[]> {
  const names = (await readdir(directory)).filter(isDurableWriteTempFile);
  await Promise.all(names.map((name) => unlink(join(directory, name)).catch(() => {})));
  return names;
}
