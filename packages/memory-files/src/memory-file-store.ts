import { lstat, readFile, realpath } from "node:fs/promises";
import * as path from "node:path";
import { resolveWorkspacePath } from "@almanac/agent";
import { errnoCode, isAlmanacError, type Logger, silentLogger, UserError } from "@almanac/core";
import { makeDirectoriesBelow, makeDirectoryIn, writeFileDurably } from "@almanac/durable-write";
import { hashContent } from "./content-hash.js";
import { listMemoryFiles } from "./list-memory-files.js";
import { createMemoryBackups, type MemoryBackups } from "./memory-backups.js";
import { isMemoryFilePath } from "./memory-paths.js";

/** When a write counts as destroying a file: it shrinks a file longer than `minChars` below `minRatio` of it. */
export interface ShrinkGuard {
  readonly minChars: number;
  readonly minRatio: number;
}

/** The default guard: a file over 200 characters may not lose more than half of its length in one write. */
export const DEFAULT_SHRINK_GUARD: ShrinkGuard = Object.freeze({ minChars: 200, minRatio: 0.5 });

/** True when replacing `previous` by `next` would drop most of a non-trivial file. */
export function isDestructiveShrink(
  previous: string,
  next: string,
  guard: ShrinkGuard = DEFAULT_SHRINK_GUARD,
) {
  return previous.length > guard.minChars && next.length < previous.length * guard.minRatio;
}

/** One memory file as listed by {@link MemoryFileStore.list}. */
export interface MemoryFileInfo {
  /** Relative to the workspace, `/`-separated: `MEMORY.md` or `memory/….md`. */
  readonly path: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly hash: string;
}

/** A memory file's text and the hash to pass back as `expectedHash`. */
export interface MemoryFileContent {
  readonly path: string;
  readonly content: string;
  readonly hash: string;
}

/** Options of {@link MemoryFileStore.write}. */
export interface MemoryWriteOptions {
  /** The hash the caller read; `null` means "the file must not exist yet". A mismatch is `memory.conflict`. */
  readonly expectedHash?: string | null;
  /** Accept a write that drops most of the file (a deliberate replacement). */
  readonly allowShrink?: boolean;
}

/** What a write did. */
export interface MemoryWriteResult {
  readonly path: string;
  readonly hash: string;
  /** False when the file already had exactly this content (nothing was written). */
  readonly changed: boolean;
  readonly created: boolean;
  /** Where the previous version was saved, when there was one. */
  readonly backupPath?: string;
}

/** Guarded access to `MEMORY.md` and `memory/**\/*.md`, shared by the admin API and the summarizer. */
export interface MemoryFileStore {
  /** `MEMORY.md` first, then `memory/**\/*.md` by path. Symlinks and dot files are skipped. */
  list(): Promise<MemoryFileInfo[]>;
  /** Reads a memory file; a missing one is `UserError` `memory.not_found`. */
  read(relativePath: string): Promise<MemoryFileContent>;
  /** Reads a memory file, or `undefined` when it does not exist. */
  tryRead(relativePath: string): Promise<MemoryFileContent | undefined>;
  /**
   * Replaces a memory file atomically after backing up its previous version. Refuses with
   * `memory.path_refused` (not a memory file), `memory.conflict` (`expectedHash` mismatch) and
   * `memory.shrink_refused` (destructive shrink without `allowShrink`).
   */
  write(relativePath: string, content: string, options?: MemoryWriteOptions): Promise<MemoryWriteResult>;
}

/** Options of {@link createMemoryFileStore}. */
export interface MemoryFileStoreOptions {
  /** The workspace directory holding `MEMORY.md` and `memory/`. Created when missing. */
  readonly workspace: string;
  /** The state directory; backups go to `<stateDir>/backups/memory-files/`. */
  readonly stateDir: string;
  readonly logger?: Logger;
  /** Milliseconds since the epoch (names backups). Default `Date.now`. */
  readonly clock?: () => number;
  /** Backups kept per file. Default 20. */
  readonly maxBackupsPerFile?: number;
  readonly shrinkGuard?: ShrinkGuard;
}

function refusePath(requested: string, why: string, cause?: unknown): UserError {
  return new UserError(
    "memory.path_refused",
    `"${requested}" is not a memory file: ${why}. Memory files are MEMORY.md, memory/**/*.md and shared/<chat>/*.md in the workspace.`,
    cause === undefined ? {} : { cause },
  );
}

/** Longest file or folder name in a memory path, in UTF-8 bytes. */
const MAX_SEGMENT_BYTES = 200;

/** Lexical checks: relative, `/`-separated, no `..`, shaped like a memory file path, names of at most 200 bytes. */
export function normalizeMemoryPath(requested: string): string {
  if (requested.includes("\\")) throw refusePath(requested, "use / as the separator");
  if (requested.includes("\0") || path.posix.isAbsolute(requested) || path.win32.isAbsolute(requested)) {
    throw refusePath(requested.replaceAll("\0", "\\0"), "give a path relative to the workspace");
  }
  const normalized = path.posix.normalize(requested);
  if (normalized === ".." || normalized.startsWith("../"))
    throw refusePath(requested, "it leaves the workspace");
  if (!isMemoryFilePath(normalized)) throw refusePath(requested, "only Markdown memory files can be used");
  // File systems cap a name at 255 bytes; backups and temp files add ~30 to it.
  if (normalized.split("/").some((segment) => Buffer.byteLength(segment) > MAX_SEGMENT_BYTES))
    throw refusePath(`${requested.slice(0, 60)}…`, `a name in it is longer than ${MAX_SEGMENT_BYTES} bytes`);
  return normalized;
}

/** Creates the store. Writes within this process are serialized per file. */
export function createMemoryFileStore(options: MemoryFileStoreOptions): MemoryFileStore {
  const workspace = path.resolve(options.workspace);
  const logger = (options.logger ?? silentLogger).child({ component: "memory-file-store" });
  const shrinkGuard = options.shrinkGuard ?? DEFAULT_SHRINK_GUARD;
  const maxBackupsPerFile = options.maxBackupsPerFile ?? 20;
  if (!Number.isSafeInteger(maxBackupsPerFile) || maxBackupsPerFile < 1) {
    throw new UserError("config.invalid", "createMemoryFileStore: maxBackupsPerFile must be at least 1.");
  }
  const backups: MemoryBackups = createMemoryBackups({
    directory: path.join(options.stateDir, "backups", "memory-files"),
    // The data directory the state directory is in: `state/` is made if missing, a vanished data directory never.
    root: path.dirname(options.stateDir),
    clock: options.clock ?? Date.now,
    maxPerFile: maxBackupsPerFile,
  });
  const locks = new Map<string, Promise<unknown>>();
  let workspaceReady: Promise<string> | undefined;

  const realWorkspace = () => {
    // Made inside a parent that must exist: a data directory that vanished is an error, not made again; the next
    // call tries again (the directory may be back).
    workspaceReady ??= makeDirectoryIn(workspace)
      .then(() => realpath(workspace))
      .catch((error: unknown) => {
        workspaceReady = undefined;
        throw error;
      });
    return workspaceReady;
  };

  /** The real absolute path of a memory file, refusing symlinks that lead anywhere but a memory file. */
  const resolve = async (
    requested: string,
  ): Promise<{ relative: string; absolute: string; root: string }> => {
    const relative = normalizeMemoryPath(requested);
    const root = await realWorkspace();
    let absolute: string;
    try {
      absolute = await resolveWorkspacePath(root, relative);
    } catch (error) {
      if (isAlmanacError(error) && error.code === "workspace.path_outside") {
        throw refusePath(requested, "it leads outside the workspace", error);
      }
      throw error;
    }
    const real = path.relative(root, absolute).split(path.sep).join("/");
    if (!isMemoryFilePath(real)) throw refusePath(requested, `it is a link to "${real}"`);
    return { relative, absolute, root };
  };

  const readOptional = async (absolute: string): Promise<string | undefined> => {
    try {
      return await readFile(absolute, "utf8");
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return undefined;
      if (errnoCode(error) === "EISDIR") throw refusePath(path.basename(absolute), "it is a directory");
      throw error;
    }
  };

  const withLock = async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const previous = locks.get(key) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(work);
    locks.set(key, next);
    try {
      return await next;
    } finally {
      if (locks.get(key) === next) locks.delete(key);
    }
  };

  const tryRead = async (requested: string): Promise<MemoryFileContent | undefined> => {
    const { relative, absolute } = await resolve(requested);
    const content = await readOptional(absolute);
    return content === undefined ? undefined : { path: relative, content, hash: hashContent(content) };
  };

  return {
    async list() {
      const root = await realWorkspace();
      const found = await listMemoryFiles(root);
      const infos: MemoryFileInfo[] = [];
      for (const relative of found) {
        const absolute = path.join(root, ...relative.split("/"));
        const content = await readOptional(absolute);
        if (content === undefined) continue; // deleted while listing
        const stats = await lstat(absolute).catch(() => undefined);
        infos.push({
          path: relative,
          size: Buffer.byteLength(content, "utf8"),
          mtimeMs: stats?.mtimeMs ?? 0,
          hash: hashContent(content),
        });
      }
      return infos;
    },

    async read(requested) {
      const file = await tryRead(requested);
      if (file === undefined) {
        throw new UserError(
          "memory.not_found",
          `Memory file "${normalizeMemoryPath(requested)}" does not exist.`,
        );
      }
      return file;
    },

    tryRead,

    async write(requested, content, writeOptions = {}) {
      const { relative, absolute, root } = await resolve(requested);
      return withLock(relative, async () => {
        const current = await readOptional(absolute);
        const currentHash = current === undefined ? null : hashContent(current);
        const { expectedHash } = writeOptions;
        if (expectedHash !== undefined && expectedHash !== currentHash) {
          throw new UserError(
            "memory.conflict",
            `"${relative}" changed since it was read (it was edited meanwhile); read it again and redo the change.`,
          );
        }
        const hash = hashContent(content);
        if (current === content) return { path: relative, hash, changed: false, created: false };
        if (
          current !== undefined &&
          writeOptions.allowShrink !== true &&
          isDestructiveShrink(current, content, shrinkGuard)
        ) {
          throw new UserError(
            "memory.shrink_refused",
            `Refused to write "${relative}": the new content (${content.length} characters) would drop most of the existing ${current.length} characters. Keep the existing entries and change only what needs changing.`,
          );
        }
        // Below the workspace only: if the data directory vanished since it was resolved, the write fails.
        await makeDirectoriesBelow(root, path.dirname(absolute));
        const backupPath = current === undefined ? undefined : await backups.save(relative, current);
        await writeFileDurably(absolute, content);
        logger.debug({ path: relative, chars: content.length, backupPath }, "memory file written");
        return {
          path: relative,
          hash,
          changed: true,
          created: current === undefined,
          ...(backupPath === undefined ? {} : { backupPath }),
        };
      });
    },
  };
}
