import { createHash } from "node:crypto";
import { once } from "node:events";
import { type FileHandle, link, mkdtemp, open, rename, rm, stat, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { isErrnoCode, UserError } from "@almanac/core";
import { fsyncDirectory, PRIVATE_FILE_MODE } from "@almanac/durable-write";
import { Header, Pack, ReadEntry } from "tar";
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  type BackupManifest,
  DATA_ENTRY_PREFIX,
  MANIFEST_ENTRY,
  type ManifestExclusion,
  type ManifestFile,
} from "./backup-manifest.js";
import { type CapturedFile, captureDataDirectory, STAGING_PREFIX } from "./data-dir-capture.js";

/** Options of {@link createBackupArchive}. */
export interface CreateArchiveOptions {
  /** The data directory. */
  readonly home: string;
  /** Where the archive goes; it must not exist yet. Written beside it first, renamed when complete. */
  readonly file: string;
  readonly almanacVersion: string;
  readonly createdBy: BackupManifest["createdBy"];
  /** Current time in ms (default `Date.now`). */
  readonly clock?: () => number;
}

/** What {@link createBackupArchive} made. */
export interface ArchiveSummary {
  readonly file: string;
  /** Bytes of the archive. */
  readonly size: number;
  /** SHA-256 of the archive, to check a download against. */
  readonly sha256: string;
  readonly createdAt: string;
  /** Files in the archive and their bytes before compression. */
  readonly files: number;
  readonly bytes: number;
  readonly excluded: readonly ManifestExclusion[];
  readonly durationMs: number;
}

const READ_CHUNK = 1024 * 1024;

/**
 * Writes a `.tar.gz` of the data directory: its files under `data/` (each 0600, with its modification time),
 * then `manifest.json` with every file's size and SHA-256 and what was left out. Safe while the server runs:
 * the files are taken in the order of {@link captureDataDirectory}, the index through SQLite's online backup.
 * The archive is private (0600), fsynced, and appears at `file` only once complete.
 */
export async function createBackupArchive(options: CreateArchiveOptions): Promise<ArchiveSummary> {
  const { home, file } = options;
  const clock = options.clock ?? Date.now;
  const startedAt = clock();
  const createdAt = new Date(startedAt).toISOString();
  if (await stat(file).catch(() => undefined))
    throw new UserError("backup.exists", `${file} exists already; choose another file.`);
  // A private folder beside the archive for its temp file and the index copy (mkdtemp makes it 0700).
  const staging = await mkdtemp(join(dirname(file), STAGING_PREFIX));
  try {
    const temp = join(staging, "archive.tar.gz");
    const archive = await TarGzWriter.create(temp);
    const files: ManifestFile[] = [];
    const excluded: ManifestExclusion[] = [];
    const addFile = async (captured: CapturedFile) => {
      const { path, length, mtimeMs } = captured;
      try {
        const chunks =
          "bytes" in captured ? single(captured.bytes) : readRange(captured.handle, length, path);
        const sha256 = await archive.add(`${DATA_ENTRY_PREFIX}${path}`, length, mtimeMs, chunks);
        files.push({ path, size: length, sha256, mtimeMs: Math.round(mtimeMs) });
      } finally {
        if ("handle" in captured) await captured.handle.close();
      }
    };
    let written: { size: number; sha256: string };
    try {
      for await (const step of captureDataDirectory(home)) {
        if (step.kind === "excluded") excluded.push(step.exclusion);
        else if (step.kind === "file") await addFile(step);
        else {
          const copy = await copyIndex(join(home, step.path), join(staging, "index.sqlite"));
          if (typeof copy === "string") excluded.push({ path: step.path, reason: copy });
          else await addFile({ kind: "file", path: step.path, ...copy, mtimeMs: clock() });
        }
      }
      const manifest: BackupManifest = {
        format: BACKUP_FORMAT,
        formatVersion: BACKUP_FORMAT_VERSION,
        almanacVersion: options.almanacVersion,
        createdAt,
        createdBy: options.createdBy,
        files,
        excluded,
      };
      const text = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
      await archive.add(MANIFEST_ENTRY, text.length, clock(), single(text));
      written = await archive.finish();
    } catch (error) {
      await archive.abort(error);
      throw error;
    }
    await publishFile(temp, file);
    return {
      file,
      ...written,
      createdAt,
      files: files.length,
      bytes: files.reduce((sum, entry) => sum + entry.size, 0),
      excluded,
      durationMs: clock() - startedAt,
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** The index copied into `copy` and opened, or why it could not be (the server then rebuilds it). */
async function copyIndex(
  index: string,
  copy: string,
): Promise<{ handle: FileHandle; length: number } | string> {
  try {
    const { copySqliteIndex } = await import("./sqlite-index-copy.js");
    await copySqliteIndex(index, copy);
  } catch (error) {
    return `could not be copied (${(error as Error).message}); the server rebuilds it from the Markdown`;
  }
  const handle = await open(copy, "r");
  try {
    return { handle, length: (await handle.stat()).size };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * A `.tar.gz` being written to a new file, one entry at a time, with the SHA-256 of the whole archive (what the
 * API answers, so a download can be checked). Entries go through tar's `Pack` (headers, long paths as PAX
 * records, padding), then gzip, then the file.
 */
class TarGzWriter {
  readonly #pack = new Pack({ portable: true });
  readonly #output: FileHandle;
  readonly #hash = createHash("sha256");
  #size = 0;
  readonly #writing: Promise<void>;
  /** Rejects once writing failed (or ended early): an entry waiting for room must not wait forever. */
  readonly #failed: Promise<never>;

  static async create(path: string): Promise<TarGzWriter> {
    return new TarGzWriter(await open(path, "wx", PRIVATE_FILE_MODE));
  }

  private constructor(output: FileHandle) {
    this.#output = output;
    this.#writing = pipeline(this.#pack, createGzip(), async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) {
        this.#hash.update(chunk);
        this.#size += chunk.length;
        await output.writeFile(chunk);
      }
    });
    this.#failed = this.#writing.then(() => {
      throw new Error("the archive stream ended before its last entry");
    });
    this.#failed.catch(() => {});
  }

  /** Adds a file of exactly `size` bytes from `chunks`; returns their SHA-256. */
  async add(path: string, size: number, mtimeMs: number, chunks: AsyncIterable<Buffer>): Promise<string> {
    const entry = new ReadEntry(
      new Header({ path, mode: PRIVATE_FILE_MODE, size, mtime: new Date(mtimeMs), type: "File" }),
    );
    this.#pack.add(entry);
    const hash = createHash("sha256");
    for await (const chunk of chunks) {
      hash.update(chunk);
      if (!entry.write(chunk)) await Promise.race([once(entry, "drain"), this.#failed]);
    }
    entry.end();
    return hash.digest("hex");
  }

  /** Ends the archive, fsyncs and closes the file. */
  async finish(): Promise<{ size: number; sha256: string }> {
    this.#pack.end();
    try {
      await this.#writing;
      await this.#output.sync();
    } finally {
      await this.#output.close();
    }
    return { size: this.#size, sha256: this.#hash.digest("hex") };
  }

  /** Stops writing after a failure and closes the file (the caller removes it). */
  async abort(error: unknown): Promise<void> {
    this.#pack.destroy(error instanceof Error ? error : undefined);
    await this.#writing.catch(() => {});
    await this.#output.close().catch(() => {});
  }
}

async function* single(buffer: Buffer): AsyncGenerator<Buffer> {
  yield buffer;
}

/** The first `length` bytes of an open file, in chunks; a file that shrank meanwhile fails the backup. */
async function* readRange(handle: FileHandle, length: number, path: string): AsyncGenerator<Buffer> {
  let position = 0;
  while (position < length) {
    const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK, length - position));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0)
      throw new UserError(
        "backup.file_changed",
        `${path} became shorter while it was being archived (it is being rewritten in place); try again.`,
      );
    position += bytesRead;
    yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
  }
}

/**
 * Moves a finished file (fsynced, in the same folder or file system) to its name without replacing a file that
 * appeared there meanwhile; `backup.exists` when one did.
 */
export async function publishFile(temp: string, file: string): Promise<void> {
  try {
    await link(temp, file);
    await unlink(temp);
  } catch (error) {
    if (isErrnoCode(error, "EEXIST"))
      throw new UserError("backup.exists", `${file} exists already; choose another file.`, { cause: error });
    // A file system without hard links: a plain rename (the name was free when the backup began).
    if (!isErrnoCode(error, "EPERM", "ENOTSUP", "EOPNOTSUPP", "EXDEV")) throw error;
    await rename(temp, file);
  }
  await fsyncDirectory(dirname(file));
}
