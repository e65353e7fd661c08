import { randomBytes } from "node:crypto";
import { open, unlink } from "node:fs/promises";
import * as path from "node:path";
import { errnoCode } from "@almanac/core";

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
    const code = errnoCode(current);
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
