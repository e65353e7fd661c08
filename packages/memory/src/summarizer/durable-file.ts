import { createHash, randomBytes } from "node:crypto";
import { chmod, type FileHandle, open, rename, stat, unlink } from "node:fs/promises";
import * as path from "node:path";

/** The SHA-256 of a text (UTF-8), hex: how memory files and base versions are compared. */
export function hashContent(content: string): string {
  return createHash("sha256").update(content, "utf8").digest("hex");
}

/** The `code` of a Node.js system error, if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/** The errnos of a disk that takes no more writes: full, over quota, or mounted read-only. */
export type StorageErrno = "ENOSPC" | "EDQUOT" | "EROFS";

const STORAGE_ERRNOS: ReadonlySet<string> = new Set<StorageErrno>(["ENOSPC", "EDQUOT", "EROFS"]);

/**
 * The storage errno behind `error` (itself or any error in its `cause` chain), if the write failed because
 * the disk is full or read-only: the one rule for "wait for space, do not give up". EIO is left out on
 * purpose: it means a failing disk, not one that fills and empties again.
 */
export function storageErrnoOf(error: unknown): StorageErrno | undefined {
  let current = error;
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth += 1) {
    const code = errorCode(current);
    if (code !== undefined && STORAGE_ERRNOS.has(code)) return code as StorageErrno;
    current = "cause" in current ? current.cause : undefined;
  }
  return undefined;
}

/**
 * Whether `directory` takes a small durable write right now (write, fsync, remove a scratch file): how a
 * component that stopped on a full disk learns that space is back without redoing expensive work.
 */
export async function probeWritable(directory: string, bytes = 4096): Promise<boolean> {
  const file = path.join(directory, `.probe.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const handle = await open(file, "wx", 0o600);
    try {
      await handle.writeFile(Buffer.alloc(bytes));
      await handle.sync();
    } finally {
      await handle.close();
    }
    return true;
  } catch (error) {
    if (storageErrnoOf(error) !== undefined) return false;
    throw error;
  } finally {
    await unlink(file).catch(() => {});
  }
}

/**
 * Flushes a directory's entries to disk, so a rename or a new file inside it survives a power cut.
 * File systems that cannot fsync a directory (EINVAL, EISDIR on some platforms) are tolerated: the
 * rename is still atomic there, only its durability is up to the OS.
 */
export async function fsyncDirectory(directory: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(directory, "r");
    await handle.sync();
  } catch (error) {
    const code = errorCode(error);
    if (code !== "EINVAL" && code !== "EISDIR" && code !== "EPERM" && code !== "ENOTSUP") throw error;
  } finally {
    await handle?.close();
  }
}

async function existingMode(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).mode & 0o7777;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Replaces `file` with `content` so that a crash at any moment leaves either the old or the new
 * version, never a mix: write a temp file beside it, fsync it, rename it over the file, fsync the
 * directory. The existing file's permission bits are kept. The parent directory must exist.
 */
export async function writeFileDurable(file: string, content: string): Promise<void> {
  const directory = path.dirname(file);
  // A dot name that does not end in .md: file watchers and memory listings skip it.
  const temp = path.join(directory, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  const mode = await existingMode(file);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, "wx", 0o644);
    await handle.writeFile(content, "utf8");
    if (mode !== undefined) await chmod(temp, mode);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, file);
  } catch (error) {
    await handle?.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await fsyncDirectory(directory);
}
