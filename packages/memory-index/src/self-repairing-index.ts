import { existsSync, renameSync } from "node:fs";
import { type Logger, silentLogger } from "@almanac/core";
import Database from "better-sqlite3";
import type { MemoryIndexBackend } from "./types.js";

/** A damaged index file that was moved aside (the Markdown rebuilds what it held). */
export interface IndexRepair {
  /** Why the file could not be used, e.g. `SQLITE_NOTADB: file is not a database`. */
  readonly reason: string;
  /** Where the damaged file went (its `-wal` and `-shm` files, if any, went beside it). */
  readonly movedTo: string;
  /** Milliseconds since the Unix epoch. */
  readonly at: number;
}

/** Options of {@link createSelfRepairingIndex}. */
export interface SelfRepairingIndexOptions {
  /** The database file; `:memory:` is never repaired. */
  readonly file: string;
  /** Opens a backend over `file` (creating it when absent). */
  readonly open: () => MemoryIndexBackend;
  /** Told after every repair, at open or later; the caller starts a rebuild from the Markdown. */
  readonly onRepair?: (repair: IndexRepair) => void;
  readonly logger?: Logger;
  /** Current time in ms (default `Date.now`), for the `.corrupt-<time>` name. */
  readonly clock?: () => number;
}

const corruptionCodes = new Set(["SQLITE_NOTADB", "SQLITE_CORRUPT"]);

function sqliteCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (current instanceof Database.SqliteError) return current.code;
    current = current.cause;
  }
  return undefined;
}

/** True when `error` (or its cause) says the database file is damaged: not a database, or malformed. */
export function isIndexCorruption(error: unknown): boolean {
  const code = sqliteCode(error);
  return code !== undefined && [...corruptionCodes].some((known) => code.startsWith(known));
}

/**
 * Why an existing file is not one of our indexes (a database of another application), or undefined.
 * Never writes to the file: a foreign database is moved aside whole, not emptied.
 */
function foreignSchema(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  // Read-only, so that SQLite leaves a damaged file and its -wal/-shm exactly as they were.
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .pluck()
      .all();
    if (tables.length === 0) return undefined;
    const version = tables.includes("meta")
      ? db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").pluck().get()
      : undefined;
    return version === undefined
      ? `not an Almanac memory index (it holds the tables ${tables.slice(0, 5).join(", ")})`
      : undefined;
  } finally {
    db.close();
  }
}

/** `2025-01-02T03-04-05-678Z`: an ISO time safe in file names. */
function stamp(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace(/[:.]/g, "-");
}

/** Renames the file with its `-wal` and `-shm` to `<file>.corrupt-<time>[-n]`, never over an earlier copy. */
function moveAside(file: string, now: number): string {
  let target = `${file}.corrupt-${stamp(now)}`;
  for (let attempt = 1; existsSync(target); attempt += 1) target = `${file}.corrupt-${stamp(now)}-${attempt}`;
  for (const suffix of ["-wal", "-shm", ""]) {
    if (existsSync(`${file}${suffix}`)) renameSync(`${file}${suffix}`, `${target}${suffix}`);
  }
  return target;
}

/**
 * Wraps an index backend over a file that may be damaged: a corrupt or foreign file found at open, or
 * corruption reported by a later query, is moved aside and a fresh, empty index takes its place (the
 * Markdown is the source of truth; `onRepair` tells the caller to rebuild). An operation that met the
 * corruption is retried once on the fresh index, so callers see an incomplete index, never the error.
 */
export function createSelfRepairingIndex(options: SelfRepairingIndexOptions): MemoryIndexBackend {
  const logger = (options.logger ?? silentLogger).child({ component: "memory-index" });
  const clock = options.clock ?? Date.now;
  const repairable = options.file !== ":memory:";

  const repair = (reason: string): void => {
    const at = clock();
    const movedTo = moveAside(options.file, at);
    logger.warn(
      { file: options.file, reason, movedTo },
      "the memory index is damaged; moved it aside and rebuilding it from the Markdown",
    );
    options.onRepair?.({ reason, movedTo, at });
  };

  const openChecked = (): MemoryIndexBackend => {
    if (!repairable) return options.open();
    let problem: string | undefined;
    try {
      problem = foreignSchema(options.file);
    } catch (error) {
      if (!isIndexCorruption(error)) throw error;
      problem = describe(error);
    }
    if (problem === undefined) {
      try {
        return options.open();
      } catch (error) {
        if (!isIndexCorruption(error)) throw error;
        problem = describe(error);
      }
    }
    repair(problem);
    return options.open();
  };

  let current = openChecked();

  /** Runs `work` on the current backend; on corruption repairs once and retries on the fresh index. */
  const guarded = async <T>(work: (backend: MemoryIndexBackend) => Promise<T>): Promise<T> => {
    const backend = current;
    try {
      return await work(backend);
    } catch (error) {
      if (!repairable || !isIndexCorruption(error)) throw error;
      // Another call may have met the same corruption and repaired it already. Nothing here awaits before
      // `current` is replaced (the SQLite close is synchronous), so two calls never both repair.
      if (backend === current) {
        const closed = backend.close().catch(() => {});
        repair(describe(error));
        current = options.open();
        await closed;
      }
      return work(current);
    }
  };

  return {
    get kind() {
      return current.kind;
    },
    upsertFile: (file, chunks, embeddings) =>
      guarded((backend) => backend.upsertFile(file, chunks, embeddings)),
    upsertFiles: (files) => guarded((backend) => backend.upsertFiles(files)),
    deleteFile: (file) => guarded((backend) => backend.deleteFile(file)),
    fileState: (file) => guarded((backend) => backend.fileState(file)),
    listFiles: () => guarded((backend) => backend.listFiles()),
    search: (query) => guarded((backend) => backend.search(query)),
    termStatistics: (terms) => guarded((backend) => backend.termStatistics(terms)),
    pendingChunks: (limit) => guarded((backend) => backend.pendingChunks(limit)),
    setVectors: (model, vectors) => guarded((backend) => backend.setVectors(model, vectors)),
    cachedVectors: (model, hashes) => guarded((backend) => backend.cachedVectors(model, hashes)),
    clearVectors: () => guarded((backend) => backend.clearVectors()),
    clear: () => guarded((backend) => backend.clear()),
    stats: () => guarded((backend) => backend.stats()),
    close: () => current.close(),
  };
}

function describe(error: unknown): string {
  const code = sqliteCode(error);
  const message = error instanceof Database.SqliteError ? error.message : String(error);
  return code === undefined ? message : `${code}: ${message}`;
}
