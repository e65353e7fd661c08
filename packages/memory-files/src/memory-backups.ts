import { readdir, unlink } from "node:fs/promises";
import * as path from "node:path";
import { errnoCode } from "@almanac/core";
import { makeDirectoriesBelow, writeFileDurably } from "@almanac/durable-write";

/** Options of {@link createMemoryBackups}. */
export interface MemoryBackupsOptions {
  /** Where backups go; one sub-path per memory file, mirroring the workspace layout. */
  readonly directory: string;
  /**
   * A folder above `directory` that must exist (the data directory): the folders below it are made as needed, never
   * it, so a data directory that vanished is reported rather than made again for one backup.
   */
  readonly root: string;
  /** Milliseconds since the epoch; names each backup. */
  readonly clock: () => number;
  /** Backups kept per memory file; older ones are deleted. */
  readonly maxPerFile: number;
}

/** Earlier versions of memory files, kept before every rewrite. */
export interface MemoryBackups {
  /** Saves `content` as the newest backup of `relativePath` (durably) and prunes old ones; returns its path. */
  save(relativePath: string, content: string): Promise<string>;
  /** The backup files of `relativePath`, oldest first (absolute paths). */
  list(relativePath: string): Promise<string[]>;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `20240501T120000123Z`: sortable, and valid in file names on every platform. */
function stampOf(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace(/[-:.]/g, "");
}

/**
 * Creates the backup keeper. A backup of `memory/2024-05-01.md` lives at
 * `<directory>/memory/2024-05-01.md.<stamp>-<n>.bak`, so a person can find and restore it by hand.
 */
export function createMemoryBackups(options: MemoryBackupsOptions): MemoryBackups {
  const { directory, root, clock, maxPerFile } = options;

  const locate = (relativePath: string) => {
    const target = path.join(directory, ...relativePath.split("/"));
    const base = path.basename(target);
    return {
      folder: path.dirname(target),
      base,
      pattern: new RegExp(`^${escapeRegExp(base)}\\.\\d{8}T\\d{9}Z-\\d{3}\\.bak$`),
    };
  };

  const namesOf = async (folder: string, pattern: RegExp): Promise<string[]> => {
    try {
      return (await readdir(folder)).filter((name) => pattern.test(name)).sort();
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return [];
      throw error;
    }
  };

  return {
    async save(relativePath, content) {
      const { folder, base, pattern } = locate(relativePath);
      await makeDirectoriesBelow(root, folder);
      const existing = new Set(await namesOf(folder, pattern));
      const stamp = stampOf(clock());
      let counter = 0;
      let name = `${base}.${stamp}-000.bak`;
      while (existing.has(name) && counter < 999) {
        counter += 1;
        name = `${base}.${stamp}-${String(counter).padStart(3, "0")}.bak`;
      }
      const file = path.join(folder, name);
      await writeFileDurably(file, content);
      const names = [...existing, name].sort();
      for (const old of names.slice(0, Math.max(0, names.length - maxPerFile))) {
        await unlink(path.join(folder, old)).catch((error: unknown) => {
          if (errnoCode(error) !== "ENOENT") throw error;
        });
      }
      return file;
    },

    async list(relativePath) {
      const { folder, pattern } = locate(relativePath);
      return (await namesOf(folder, pattern)).map((name) => path.join(folder, name));
    },
  };
}
