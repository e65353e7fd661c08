import { chmod, mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { isErrnoCode, UserError } from "@almanac/core";
import { PRIVATE_DIRECTORY_MODE } from "@almanac/durable-write";
import { acquireHomeLock } from "../home-lock.js";
import { type ArchiveCheck, checkArchive } from "./archive-reader.js";

/** What {@link restoreBackup} did: the archive's check, and whether its files are now in the directory. */
export interface RestoreOutcome {
  readonly restored: boolean;
  /** `verify`: the archive failed its check and nothing was written; `extract`: it failed while being written. */
  readonly failedAt?: "verify" | "extract";
  readonly check: ArchiveCheck;
}

/**
 * Restores an archive into a data directory that is empty or does not exist yet: verifies the whole archive
 * first, then writes its files (0600, folders 0700, modification times as archived) while checking them again.
 * A directory with anything in it is refused, so nothing is ever overwritten; on a failure what was written is
 * removed again. The directory's lock is held meanwhile, so no server starts on a half-restored directory.
 */
export async function restoreBackup(file: string, home: string): Promise<RestoreOutcome> {
  const existing = await readdir(home).catch((error: unknown) => {
    if (isErrnoCode(error, "ENOENT")) return undefined;
    if (isErrnoCode(error, "ENOTDIR"))
      throw new UserError("backup.target_not_empty", `${home} is a file, not a directory.`, { cause: error });
    throw error;
  });
  if (existing !== undefined && existing.length > 0)
    throw new UserError(
      "backup.target_not_empty",
      `${home} is not empty (${existing.length} entries); restore into an empty or new directory.`,
    );
  const verified = await checkArchive(file);
  if (!verified.ok) return { restored: false, failedAt: "verify", check: verified };

  await mkdir(home, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  await chmod(home, PRIVATE_DIRECTORY_MODE);
  const lock = await acquireHomeLock(home);
  let extracted: ArchiveCheck;
  try {
    extracted = await checkArchive(file, { extractTo: home });
  } catch (error) {
    await lock.release();
    await emptyDirectory(home);
    throw error;
  }
  await lock.release();
  if (!extracted.ok) {
    await emptyDirectory(home);
    return { restored: false, failedAt: "extract", check: extracted };
  }
  return { restored: true, check: extracted };
}

/** Removes everything in a directory that was empty before the restore began. */
async function emptyDirectory(home: string): Promise<void> {
  for (const name of await readdir(home)) await rm(join(home, name), { recursive: true, force: true });
}
