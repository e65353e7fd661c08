import { chmod, lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from "@almanac/durable-write";

/** What {@link tightenDataPermissions} changed. */
export interface TightenedPermissions {
  readonly files: number;
  readonly directories: number;
}

/**
 * Takes group and other permissions off everything in the data directory (files 0600, directories 0700 at
 * most): it holds a person's private memory, transcripts and the index made from them. Files written by an
 * earlier version, by a person's editor, or restored from a backup under a loose umask are caught here at every
 * start. Symbolic links are not followed (a link to a shared folder stays as its owner made it).
 */
export async function tightenDataPermissions(home: string): Promise<TightenedPermissions> {
  let files = 0;
  let directories = 0;
  const visit = async (path: string): Promise<void> => {
    const info = await lstat(path).catch(() => undefined);
    if (info === undefined || info.isSymbolicLink()) return;
    const mode = info.mode & 0o7777;
    if (info.isDirectory()) {
      if ((mode & 0o077) !== 0) {
        await chmod(path, mode & PRIVATE_DIRECTORY_MODE);
        directories += 1;
      }
      const entries = await readdir(path).catch(() => []);
      await Promise.all(entries.map((entry) => visit(join(path, entry))));
    } else if (info.isFile() && (mode & 0o077) !== 0) {
      await chmod(path, mode & PRIVATE_FILE_MODE);
      files += 1;
    }
  };
  await visit(home);
  return { files, directories };
}
