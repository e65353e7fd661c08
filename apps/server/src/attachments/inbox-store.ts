import { randomBytes } from "node:crypto";
import { link, open, unlink } from "node:fs/promises";
import { join } from "node:path";
import { InternalError, isErrnoCode } from "@almanac/core";
import { fsyncDirectory, makeDirectoriesBelow, PRIVATE_FILE_MODE } from "@almanac/durable-write";
import { numberedFileName } from "./inbox-path.js";

/** Names tried for one file before giving up (`photo.jpg`, `photo-2.jpg`, … `photo-1000.jpg`). */
const MAX_NAME_TRIES = 1000;

/**
 * Saves received files in the workspace: each one whole or not at all (written to a temp file, fsynced, then
 * linked to its name, which never replaces a file already there: a second `photo.jpg` of the day becomes
 * `photo-2.jpg`), private to the server's user (0600 in 0700 folders).
 */
export class InboxStore {
  readonly #workspace: string;

  constructor(workspace: string) {
    this.#workspace = workspace;
  }

  /**
   * Saves `bytes` as `<folder>/<name>` (workspace-relative, `/`-separated; the name already safe) or the first free
   * numbered name, and returns the path it got.
   */
  async save(folder: string, name: string, bytes: Uint8Array): Promise<string> {
    const directory = join(this.#workspace, ...folder.split("/"));
    // Below the workspace only: a data directory that vanished is an error, not an empty copy with one file.
    await makeDirectoriesBelow(this.#workspace, directory);
    // The temp name follows the durable writer's pattern (`.<name>.<16 hex>.tmp`), so a crash's leftover is
    // recognized as one.
    const temp = join(directory, `.${name}.${randomBytes(8).toString("hex")}.tmp`);
    const handle = await open(temp, "wx", PRIVATE_FILE_MODE);
    try {
      try {
        await handle.writeFile(bytes);
        await handle.chmod(PRIVATE_FILE_MODE);
        await handle.sync();
      } finally {
        await handle.close();
      }
      for (let n = 1; n <= MAX_NAME_TRIES; n += 1) {
        const candidate = n === 1 ? name : numberedFileName(name, n);
        try {
          // link() fails when the name exists: two files of the same name never overwrite each other.
          await link(temp, join(directory, candidate));
        } catch (error) {
          if (isErrnoCode(error, "EEXIST")) continue;
          throw error;
        }
        await fsyncDirectory(directory);
        return `${folder}/${candidate}`;
      }
      throw new InternalError(
        "attachment.names_exhausted",
        `${MAX_NAME_TRIES} files named like ${name} are in ${folder} already.`,
      );
    } finally {
      await unlink(temp).catch(() => {});
    }
  }
}
