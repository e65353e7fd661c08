import { type FileHandle, open, readdir, rm, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { isErrnoCode, UserError } from "@almanac/core";
import { fsyncDirectory, makeDirectoryIn } from "@almanac/durable-write";
import { fileTimestamp, firstFreePaths } from "../sessions/file-helpers.js";
import type { ArchiveSummary } from "./archive-writer.js";
import { BACKUPS_DIR, STAGING_PREFIX } from "./data-dir-capture.js";

/** The name of an archive the server made: `almanac-backup-<UTC time>[-N].tar.gz`. */
const ARCHIVE_NAME =
  /^almanac-backup-(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})-(\d{3})Z(?:-\d+)?\.tar\.gz$/;

/** True for a name {@link BackupStore} could have given an archive (so it is a plain file name, no path). */
function isArchiveName(name: string): boolean {
  return ARCHIVE_NAME.test(name);
}

/** The file name of an archive started at `milliseconds`. */
export function archiveNameAt(milliseconds: number): string {
  return `almanac-backup-${fileTimestamp(milliseconds)}.tar.gz`;
}

/** One archive in `<home>/backups/`. */
export interface BackupListing {
  readonly name: string;
  readonly size: number;
  /** When it was begun (from its name), ISO 8601. */
  readonly createdAt: string;
}

/** A made archive, as the API answers it. */
export interface CreatedBackup extends Omit<ArchiveSummary, "file"> {
  readonly name: string;
  /** Where it is on the server's disk. */
  readonly path: string;
}

/** Options of {@link BackupStore}. */
export interface BackupStoreOptions {
  readonly home: string;
  readonly almanacVersion: string;
  readonly clock?: () => number;
}

/**
 * The server's archives of its own data directory, in `<home>/backups/`: made one at a time while the server
 * runs, listed, opened for download, deleted. Names are matched against the one pattern the store gives, so a
 * name from a URL is never a path.
 */
export class BackupStore {
  readonly #home: string;
  readonly #folder: string;
  readonly #almanacVersion: string;
  readonly #clock: () => number;
  #running: Promise<CreatedBackup> | undefined;

  constructor(options: BackupStoreOptions) {
    this.#home = options.home;
    this.#folder = join(options.home, BACKUPS_DIR);
    this.#almanacVersion = options.almanacVersion;
    this.#clock = options.clock ?? Date.now;
  }

  /** Makes an archive now; `backup.running` while another is being made. */
  create(): Promise<CreatedBackup> {
    if (this.#running !== undefined)
      throw new UserError("backup.running", "A backup is being made already; wait for it to finish.");
    const running = this.#make();
    this.#running = running;
    const done = () => {
      this.#running = undefined;
    };
    running.then(done, done);
    return running;
  }

  async #make(): Promise<CreatedBackup> {
    await makeDirectoryIn(this.#folder);
    await this.#removeLeftovers();
    const [file = ""] = await firstFreePaths((suffix) => [
      join(this.#folder, archiveNameAt(this.#clock()).replace(".tar.gz", `${suffix}.tar.gz`)),
    ]);
    // The archive writer (and `tar` with it) is loaded for the first backup, not at start-up.
    const { createBackupArchive } = await import("./archive-writer.js");
    const summary = await createBackupArchive({
      home: this.#home,
      file,
      almanacVersion: this.#almanacVersion,
      createdBy: "server",
      clock: this.#clock,
    });
    const { file: path, ...rest } = summary;
    return { name: path.slice(this.#folder.length + 1), path, ...rest };
  }

  /** Folders of archives that were being made when the process stopped (only one server uses the directory). */
  async #removeLeftovers(): Promise<void> {
    for (const name of await readdir(this.#folder))
      if (name.startsWith(STAGING_PREFIX))
        await rm(join(this.#folder, name), { recursive: true, force: true });
  }

  /** The archives, newest first. */
  async list(): Promise<BackupListing[]> {
    let names: string[];
    try {
      names = (await readdir(this.#folder)).filter(isArchiveName);
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) return [];
      throw error;
    }
    const listings: BackupListing[] = [];
    for (const name of names) {
      const info = await stat(join(this.#folder, name)).catch(() => undefined);
      if (info?.isFile()) listings.push({ name, size: info.size, createdAt: createdAtOf(name) });
    }
    return listings.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  }

  /** Opens an archive for reading (the caller closes the handle); `backup.not_found` for any other name. */
  async open(name: string): Promise<{ handle: FileHandle; size: number }> {
    const path = this.#pathOf(name);
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) throw notFound(name);
      throw error;
    }
    const info = await handle.stat();
    if (!info.isFile()) {
      await handle.close();
      throw notFound(name);
    }
    return { handle, size: info.size };
  }

  /** Deletes an archive; `backup.not_found` when there is none of that name. */
  async delete(name: string): Promise<void> {
    try {
      await unlink(this.#pathOf(name));
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) throw notFound(name);
      throw error;
    }
    await fsyncDirectory(this.#folder);
  }

  /** Waits for an archive being made (at shutdown, before the data directory's lock is released). */
  async close(): Promise<void> {
    await this.#running?.catch(() => {});
  }

  #pathOf(name: string): string {
    if (!isArchiveName(name)) throw notFound(name);
    return join(this.#folder, name);
  }
}

function notFound(name: string): UserError {
  return new UserError("backup.not_found", `No backup named ${JSON.stringify(name.slice(0, 120))}.`);
}

function createdAtOf(name: string): string {
  const [, date, hours, minutes, seconds, millis] = ARCHIVE_NAME.exec(name) ?? [];
  return `${date}T${hours}:${minutes}:${seconds}.${millis}Z`;
}
