import { constants, type Dirent, type Stats } from "node:fs";
import { type FileHandle, lstat, open, readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { isErrnoCode, UserError } from "@almanac/core";
import { isDurableWriteTempFile } from "@almanac/durable-write";
import type { ManifestExclusion } from "./backup-manifest.js";

/** The memory index, copied last through SQLite's online backup instead of being read as bytes. */
const INDEX_FILE = "state/index.sqlite";

/**
 * The folder the server keeps its archives in (`<home>/backups/`); never itself archived. Not to be confused
 * with `state/backups/`, the previous versions of memory files, which are archived like any state.
 */
export const BACKUPS_DIR = "backups";

/**
 * A file taken at its turn in the capture order: a small one already read whole (`bytes`), a large one open for
 * reading up to `length` (`handle`, which the consumer closes).
 */
export type CapturedFile = {
  readonly kind: "file";
  /** Relative to the data directory, `/`-separated. */
  readonly path: string;
  /** The bytes to archive: the size when opened, a JSON-lines file cut after its last whole line. */
  readonly length: number;
  readonly mtimeMs: number;
} & ({ readonly bytes: Buffer } | { readonly handle: FileHandle });

/** One step of a capture: a file to archive, something left out, or the index to copy. */
export type CaptureStep =
  | CapturedFile
  | { readonly kind: "excluded"; readonly exclusion: ManifestExclusion }
  | { readonly kind: "index"; readonly path: typeof INDEX_FILE };

const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

/** The private folder an archive is written in before it gets its name (beside its final place). */
export const STAGING_PREFIX = ".almanac-backup-";

/** Why a path of the data directory is left out of every archive, or undefined when it is archived. */
function exclusionReason(path: string): string | undefined {
  if (path === "state/almanac.lock")
    return "the lock of the server that uses the directory; a restored server takes its own";
  if (path === BACKUPS_DIR) return "earlier backup archives";
  if (isDurableWriteTempFile(basename(path)))
    return "a write in progress (temp file); the file it replaces is archived";
  if (basename(path).startsWith(STAGING_PREFIX)) return "an archive being written";
  if (/^state\/index\.sqlite-(wal|shm|journal)$/.test(path))
    return "part of the index: SQLite's online backup folds it into state/index.sqlite";
  return undefined;
}

/**
 * Walks the data directory in the capture order and opens each file at its turn, so that the archive, made
 * while the server writes, is a state a crash could have left (which the server then repairs like any crash):
 *
 * - A file written later in a chain is read first. A session's snapshot records its transcript's size, so the
 *   snapshot is opened before the transcript; the transcript (append-only) is then measured, and is at least that
 *   long. Sessions come before `state/`: a compaction journals its summarizer job before its snapshot, a task's
 *   firing is claimed in `state/tasks/` before its turn reaches the transcript. `state/` comes before
 *   `workspace/`: a summarizer job leaves its journal only after its daily log is written. `workspace/` comes
 *   before `state/backups/`: an old version of a memory file is kept before the new one replaces it.
 * - Files replaced atomically (temp file + rename) are read through the handle opened at their turn: a rename
 *   afterwards does not change what it reads. Append-only JSON lines files are cut after their last whole line.
 * - A session reset or archived meanwhile is seen either before or after its move, never half (see
 *   {@link openSessionPair}); anything removed between the listing and its turn is simply not there.
 * - The index is copied last: it is derived, and the server's start-up sync reconciles it with the Markdown.
 */
export async function* captureDataDirectory(home: string): AsyncGenerator<CaptureStep> {
  yield* captureSessions(home);
  yield* captureTree(home, "state", ["state/backups", INDEX_FILE]);
  yield* captureTree(home, "workspace", []);
  yield* captureTree(home, "state/backups", []);
  yield* captureTree(home, "", ["sessions", "state", "workspace"]);
  const index = await lstat(join(home, INDEX_FILE)).catch(() => undefined);
  if (index?.isFile()) yield { kind: "index", path: INDEX_FILE };
}

/** The sorted entries of a folder; none when it is missing. */
async function entriesOf(directory: string): Promise<Dirent[]> {
  try {
    const entries = await readdir(directory, { withFileTypes: true });
    return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  } catch (error) {
    if (isErrnoCode(error, "ENOENT", "ENOTDIR")) return [];
    throw error;
  }
}

const relativeOf = (folder: string, name: string) => (folder === "" ? name : `${folder}/${name}`);

/** Every file under `folder` (relative to `home`), depth first in name order, except the paths in `skip`. */
async function* captureTree(
  home: string,
  folder: string,
  skip: readonly string[],
): AsyncGenerator<CaptureStep> {
  for (const entry of await entriesOf(join(home, folder))) {
    const path = relativeOf(folder, entry.name);
    if (skip.includes(path)) continue;
    yield* captureEntry(home, path, entry);
  }
}

async function* captureEntry(home: string, path: string, entry: Dirent): AsyncGenerator<CaptureStep> {
  const reason = exclusionReason(path);
  if (reason !== undefined) {
    yield { kind: "excluded", exclusion: { path, reason } };
  } else if (entry.isDirectory()) {
    yield* captureTree(home, path, []);
  } else if (entry.isSymbolicLink()) {
    yield { kind: "excluded", exclusion: { path, reason: "a symbolic link (not followed)" } };
  } else if (!entry.isFile()) {
    yield { kind: "excluded", exclusion: { path, reason: "not a regular file" } };
  } else {
    const opened = await openRegular(join(home, path));
    if (opened === "not a file") {
      yield { kind: "excluded", exclusion: { path, reason: "not a regular file" } };
    } else if (opened !== undefined) {
      yield await taken(path, opened);
    }
  }
}

/**
 * `sessions/`: each session's snapshot and transcript as a pair (snapshot first), then everything else in the
 * folder (files moved aside, `archive/`) in name order. The archive comes after the live sessions: a session
 * archived while the capture runs is then found in one place or the other.
 */
async function* captureSessions(home: string): AsyncGenerator<CaptureStep> {
  const entries = await entriesOf(join(home, "sessions"));
  /** Each session's stem, and whether its snapshot was listed (one that appears later is left out). */
  const stems = new Map<string, boolean>();
  for (const entry of entries) {
    if (!entry.isFile() || entry.name.startsWith(".")) continue;
    const match = /^(.+)\.json(l?)$/.exec(entry.name);
    if (match?.[1] !== undefined) stems.set(match[1], (stems.get(match[1]) ?? false) || match[2] === "");
  }
  for (const [stem, withSnapshot] of stems) {
    const { snapshot, transcript } = await openSessionPair(join(home, "sessions"), stem, withSnapshot);
    let transcriptTaken = false;
    try {
      if (snapshot) yield await taken(`sessions/${stem}.json`, snapshot);
      // Measured after the snapshot was opened, so at least as long as the snapshot records (it only grows
      // within one life of the session).
      if (transcript) {
        transcriptTaken = true;
        yield await taken(`sessions/${stem}.jsonl`, transcript);
      }
    } finally {
      if (!transcriptTaken) await transcript?.handle.close();
    }
  }
  for (const entry of entries) {
    const stemOf = /^(.+)\.jsonl?$/.exec(entry.name)?.[1];
    if (entry.isFile() && stemOf !== undefined && stems.has(stemOf) && !entry.name.startsWith(".")) continue;
    yield* captureEntry(home, `sessions/${entry.name}`, entry);
  }
}

/** How often a session's pair is opened again when its transcript was replaced while it was being opened. */
const PAIR_ATTEMPTS = 5;

/**
 * Opens a session's snapshot and then its transcript so that both belong to the same life of the session. A
 * reset or archive renames the snapshot away, then the transcript, and a new session at the same key starts a
 * new transcript file: when the transcript at the path is not the file that was there before the snapshot was
 * opened, both are opened again. Either file may be missing (a new session has no snapshot yet).
 */
async function openSessionPair(
  folder: string,
  stem: string,
  withSnapshot: boolean,
): Promise<{ snapshot?: OpenedFile; transcript?: OpenedFile }> {
  const transcriptPath = join(folder, `${stem}.jsonl`);
  for (let attempt = 0; attempt < PAIR_ATTEMPTS; attempt += 1) {
    const before = await lstat(transcriptPath).catch(() => undefined);
    const snapshot = withSnapshot ? await openRegular(join(folder, `${stem}.json`)) : undefined;
    const transcript = await openRegular(transcriptPath);
    const after = typeof transcript === "object" ? transcript.info : undefined;
    const same =
      after === undefined
        ? before === undefined
        : before !== undefined && before.ino === after.ino && before.dev === after.dev;
    if (same) {
      return {
        ...(typeof snapshot === "object" ? { snapshot } : {}),
        ...(typeof transcript === "object" ? { transcript } : {}),
      };
    }
    if (typeof snapshot === "object") await snapshot.handle.close();
    if (typeof transcript === "object") await transcript.handle.close();
  }
  throw new UserError(
    "backup.file_changed",
    `The session files ${stem}.json/.jsonl kept changing while the backup opened them; try again.`,
  );
}

/** An open regular file and what `fstat` said of it right after it was opened. */
interface OpenedFile {
  readonly handle: FileHandle;
  readonly info: Stats;
}

/** Opens a regular file without following a symbolic link; undefined when it is gone. */
async function openRegular(path: string): Promise<OpenedFile | "not a file" | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | NO_FOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (isErrnoCode(error, "ENOENT")) return undefined;
    if (isErrnoCode(error, "ELOOP", "EISDIR")) return "not a file";
    throw error;
  }
  try {
    const info = await handle.stat();
    if (info.isFile()) return { handle, info };
  } catch (error) {
    await handle.close();
    throw error;
  }
  await handle.close();
  return "not a file";
}

/** Files up to this size are read whole, in one read, when their turn comes; larger ones are streamed. */
const READ_WHOLE_BYTES = 1024 * 1024;

/**
 * The file as it was when opened: its size (a JSON-lines file cut after its last whole line) and modification
 * time; a small file is read at once and closed.
 */
async function taken(path: string, { handle, info }: OpenedFile): Promise<CapturedFile> {
  const jsonLines = path.endsWith(".jsonl");
  const base = { kind: "file", path, mtimeMs: info.mtimeMs } as const;
  try {
    if (info.size <= READ_WHOLE_BYTES) {
      const buffer = Buffer.allocUnsafe(info.size);
      const { bytesRead } = await handle.read(buffer, 0, info.size, 0);
      await handle.close();
      const read = buffer.subarray(0, bytesRead);
      const length = jsonLines ? read.lastIndexOf(0x0a) + 1 : read.length;
      return { ...base, length, bytes: read.subarray(0, length) };
    }
    const length = jsonLines ? await wholeLinesLength(handle, info.size) : info.size;
    return { ...base, length, handle };
  } catch (error) {
    await handle.close().catch(() => {});
    throw error;
  }
}

const TAIL_CHUNK = 64 * 1024;

/**
 * The length of the file's whole lines among its first `size` bytes: up to and including the last newline.
 * An append that is under way (or torn by a crash) is left out, as every reader of these files skips it.
 */
async function wholeLinesLength(handle: FileHandle, size: number): Promise<number> {
  let end = size;
  const buffer = Buffer.alloc(TAIL_CHUNK);
  while (end > 0) {
    const start = Math.max(0, end - TAIL_CHUNK);
    const { bytesRead } = await handle.read(buffer, 0, end - start, start);
    const newline = buffer.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline >= 0) return start + newline + 1;
    end = start;
  }
  return 0;
}
