import { existsSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, ProviderError } from "@almanac/core";
import { probeWritable, storageErrnoOf } from "@almanac/summarizer";

/**
 * The storage error codes the API answers with: a full or read-only disk (HTTP 507, see docs/operations.md
 * "Storage full"), or a data directory that is gone (deleted or unmounted while running: HTTP 503).
 */
export type StorageErrorCode = "storage.full" | "storage.read_only" | "storage.missing";

/**
 * The storage failure behind `error` (itself or any `cause`), if it is one: the errno and our code.
 * Which errnos count is decided in one place, `storageErrnoOf` (EIO does not: see there).
 */
export function storageFailureOf(
  error: unknown,
): { readonly errno: string; readonly code: StorageErrorCode } | undefined {
  if (error instanceof StorageError) return { errno: error.errno, code: error.code };
  const errno = storageErrnoOf(error);
  if (errno === undefined) return undefined;
  return { errno, code: errno === "EROFS" ? "storage.read_only" : "storage.full" };
}

/** What an operator has to do about a storage failure; used in errors, `/readyz` and the console. */
export function storageHint(code: StorageErrorCode, dataDir: string): string {
  switch (code) {
    case "storage.full":
      return `Free space on the file system that holds ${dataDir} (or raise its quota). Almanac keeps running and recovers by itself once a write succeeds again.`;
    case "storage.read_only":
      return `The file system that holds ${dataDir} is read-only; remount it read-write. Almanac recovers by itself once a write succeeds again.`;
    case "storage.missing":
      return `Restore ${dataDir} (mount the volume again, or restore a backup), then restart Almanac. It does not create a new, empty one by itself: that would hide where your data went.`;
  }
}

const PROBLEM: Readonly<Record<StorageErrorCode, string>> = {
  "storage.full": "the disk is full",
  "storage.read_only": "the disk is read-only",
  "storage.missing": "the directory is gone (deleted or unmounted)",
};

/**
 * Almanac could not write to its data directory because the disk is full or read-only (HTTP 507).
 * A provider-side failure (the disk is something we depend on), retryable once the operator makes room.
 */
export class StorageError extends ProviderError {
  override readonly code: StorageErrorCode;
  readonly errno: string;
  readonly dataDir: string;

  constructor(code: StorageErrorCode, errno: string, dataDir: string, options: { cause?: unknown } = {}) {
    const what = `${PROBLEM[code]} (${errno})`;
    super(
      code,
      `Almanac cannot save to its data directory ${dataDir}: ${what}. ${storageHint(code, dataDir)}`,
      {
        isRetryable: true,
        ...(options.cause === undefined ? {} : { cause: options.cause }),
      },
    );
    this.code = code;
    this.errno = errno;
    this.dataDir = dataDir;
  }
}

/** Storage state for `/readyz`, `GET /api/info` and the console. */
export type StorageStatus =
  | { readonly ok: true; readonly dataDir: string }
  | {
      readonly ok: false;
      readonly code: StorageErrorCode;
      readonly errno: string;
      readonly dataDir: string;
      /** When writes started failing (ISO time). */
      readonly since: string;
      readonly hint: string;
    };

/** Options of {@link createStorageHealth}. */
export interface StorageHealthOptions {
  /** The data directory (`ALMANAC_HOME`), named in errors and hints. */
  readonly dataDir: string;
  /** Where the probe writes its scratch file; default `<dataDir>/state`. */
  readonly probeDir?: string;
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly clock?: () => number;
  /** Least time between two probes while failing (default 1 000 ms), so `/readyz` polling stays cheap. */
  readonly probeEveryMs?: number;
}

/**
 * Remembers the last storage failure (full or read-only disk) of the data directory and clears it when a
 * write succeeds again, or when a probe write does. The one place that turns ENOSPC/EDQUOT/EROFS into
 * a {@link StorageError}.
 */
export interface StorageHealth {
  readonly dataDir: string;
  /** Runs a write; success clears a recorded failure, a storage failure is recorded and thrown as {@link StorageError}. */
  guard<T>(write: () => Promise<T>): Promise<T>;
  /** The {@link StorageError} for `error` (recording it) when it is a storage failure; `undefined` otherwise. */
  classify(error: unknown): StorageError | undefined;
  /** The state as last observed. */
  status(): StorageStatus;
  /** While failing, probes with a small write (at most once per `probeEveryMs`), then reports the state. */
  check(): Promise<StorageStatus>;
}

/** Creates the storage health tracker of one data directory. */
export function createStorageHealth(options: StorageHealthOptions): StorageHealth {
  const { dataDir } = options;
  const probeDir = options.probeDir ?? join(dataDir, "state");
  const clock = options.clock ?? Date.now;
  const probeEveryMs = options.probeEveryMs ?? 1_000;
  let failure: { code: StorageErrorCode; errno: string; since: number } | undefined;
  let lastProbeAt = Number.NEGATIVE_INFINITY;

  /** ENOENT while the data directory itself is gone: every later write fails the same way. */
  const missing = (error: unknown): { errno: string; code: StorageErrorCode } | undefined =>
    errnoCode(error) === "ENOENT" && !existsSync(dataDir)
      ? { errno: "ENOENT", code: "storage.missing" }
      : undefined;

  const classify = (error: unknown): StorageError | undefined => {
    const found = storageFailureOf(error) ?? missing(error);
    if (found === undefined) return undefined;
    if (failure?.code !== found.code) failure = { ...found, since: clock() };
    return error instanceof StorageError
      ? error
      : new StorageError(found.code, found.errno, dataDir, { cause: error });
  };

  const status = (): StorageStatus =>
    failure === undefined
      ? { ok: true, dataDir }
      : {
          ok: false,
          code: failure.code,
          errno: failure.errno,
          dataDir,
          since: new Date(failure.since).toISOString(),
          hint: storageHint(failure.code, dataDir),
        };

  async function probe(): Promise<void> {
    try {
      if (await probeWritable(probeDir)) failure = undefined;
    } catch {
      // Another kind of failure (the directory is gone, permissions): the recorded failure stands.
    }
  }

  return {
    dataDir,
    async guard(write) {
      try {
        const result = await write();
        failure = undefined;
        return result;
      } catch (error) {
        throw classify(error) ?? error;
      }
    },
    classify,
    status,
    async check() {
      // A stat per readiness check: cheap, and the only way to notice a directory that nothing wrote to yet.
      const present = existsSync(dataDir);
      if (!present && failure?.code !== "storage.missing")
        failure = { code: "storage.missing", errno: "ENOENT", since: clock() };
      if (present && failure?.code === "storage.missing") failure = undefined;
      if (
        failure !== undefined &&
        failure.code !== "storage.missing" &&
        clock() - lastProbeAt >= probeEveryMs
      ) {
        lastProbeAt = clock();
        await probe();
      }
      return status();
    },
  };
}
