import { fstatSync, statSync, writeSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { dirname } from "node:path";
import { isErrnoCode, type Logger, type Message } from "@almanac/core";
import { fsyncDirectory, PRIVATE_FILE_MODE, type StagedFile } from "@almanac/durable-write";
import { linesOf } from "../lines-of.js";
import { isMissing } from "./file-helpers.js";
import { checkMessages, describeIssues, transcriptLineSchema } from "./session-snapshot.js";

/**
 * The transcript files (`<stem>.jsonl`): one `{"key":…,"message":…}` object per line, appended and fsynced,
 * read back as a stream. The key tags each line so a stray or concatenated file can still be attributed.
 * Callers serialize the work on one file (the store's per-key lock); this module keeps no order itself.
 */
export interface TranscriptFiles {
  /**
   * Appends `lines` (see {@link encodeTranscriptLines}) and fsyncs, with whatever earlier deferred appends left
   * unsynced. With `alongside`, that other file (given the transcript's size after the append) is staged while
   * the transcript is written, both fsyncs are awaited together, and it is published after both; on any
   * failure the appended lines are cut off again. With `deferSync`, the lines are written (a crash of the
   * process keeps them) but not fsynced: a later {@link sync} or synced append does that.
   */
  append(key: string, path: string, lines: readonly string[], options?: AppendOptions): Promise<void>;
  /**
   * Fsyncs what deferred appends left unsynced in `path` (nothing when there is none). When an fsync fails,
   * the next append to `path` rejects with its error too: the lines written before may not be on disk.
   */
  sync(path: string): Promise<void>;
  /** Opens a transcript for reading and measures it; undefined when there is none. */
  openForReading(path: string): Promise<{ readonly handle: FileHandle; readonly size: number } | undefined>;
  /** The messages of bytes `start` to `end` (exclusive); unreadable lines are skipped with a warning. */
  read(key: string, path: string, handle: FileHandle, start: number, end: number): AsyncGenerator<Message>;
  /** The session key of the first readable line; undefined when there is none. */
  keyOf(path: string): Promise<string | undefined>;
  /** Closes the kept append handle of `path` (before the file is moved or removed). */
  drop(path: string): Promise<void>;
  /** Closes every kept append handle; later appends open and close their file. */
  close(): Promise<void>;
}

/** Options of {@link TranscriptFiles.append}. */
export interface AppendOptions {
  readonly alongside?: (sizeAfter: number) => Promise<StagedFile>;
  readonly deferSync?: boolean;
}

/**
 * Transcripts kept open for appending: about the sessions active at once (each costs one file descriptor; with
 * 64, 100 sessions talking at once reopened a transcript on most appends).
 */
const MAX_OPEN_TRANSCRIPTS = 128;

/**
 * A transcript's kept append handle, the file it was opened on (to tell whether the path still names it), and
 * the file size right after our last append through it. This module closes every handle it opens.
 */
interface OpenTranscript {
  readonly handle: FileHandle;
  readonly ino: number;
  readonly dev: number;
  readonly end: number;
  /** Written by a deferred append and not fsynced yet; `"new file"` when its directory entry is not either. */
  readonly unsynced: false | "data" | "new file";
}

/** The transcript lines of `messages`; throws `session.message_invalid` for one that could not be read back. */
export function encodeTranscriptLines(key: string, messages: readonly Message[]): string[] {
  checkMessages(key, messages);
  return messages.map((message) => JSON.stringify({ key, message }));
}

/** Creates the {@link TranscriptFiles} of one store. */
export function createTranscriptFiles(logger: Logger): TranscriptFiles {
  return new CachedTranscriptFiles(logger);
}

/** {@link TranscriptFiles} that keep the append handles of recently written transcripts open. */
class CachedTranscriptFiles implements TranscriptFiles {
  readonly #logger: Logger;
  readonly #openTranscripts = new Map<string, OpenTranscript>();
  /** Paths whose deferred lines could not be fsynced: their next append rejects with that error. */
  readonly #failedSyncs = new Map<string, unknown>();
  #closed = false;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  async append(
    key: string,
    path: string,
    lines: readonly string[],
    options: AppendOptions = {},
  ): Promise<void> {
    const { alongside, deferSync = false } = options;
    const taken = await this.#take(path);
    const { handle, ino, dev, size, end } = taken;
    // A new transcript must stay in the directory after a power loss: its directory is fsynced with the first
    // synced append. (A snapshot's rename needs no directory fsync: without it the session is rebuilt from
    // the transcript, which holds everything.)
    const newFile = size === 0 || taken.unsynced === "new file";
    let kept = false;
    try {
      let prefix = "";
      // Only a transcript that changed behind our back since our last append (or that we have just opened)
      // can end in a torn line.
      if (size > 0 && size !== end) {
        const last = Buffer.alloc(1);
        await handle.read(last, 0, 1, size - 1);
        // A crash mid-append left a line without its newline; start ours on a fresh line so only
        // the torn line is lost, not the first new message as well.
        if (last[0] !== 0x0a) {
          prefix = "\n";
          this.#logger.warn({ key, path }, "transcript ended with a torn line; starting a new line after it");
        }
      }
      const bytes = Buffer.from(`${prefix}${lines.join("\n")}\n`, "utf8");
      if (deferSync && alongside === undefined) {
        appendBlocking(handle, bytes);
        this.#keep(path, {
          handle,
          ino,
          dev,
          end: size + bytes.byteLength,
          unsynced: newFile ? "new file" : "data",
        });
        kept = true;
        return;
      }
      const staging = alongside?.(size + bytes.byteLength);
      const appending = (async () => {
        appendBlocking(handle, bytes);
        // The new file's directory entry beside its data: neither needs the other first.
        await Promise.all([handle.sync(), newFile ? fsyncDirectory(dirname(path)) : undefined]);
      })();
      const [appended, staged] = await Promise.allSettled([appending, staging]);
      if (appended.status === "rejected" || staged.status === "rejected") {
        if (staged.status === "fulfilled") await staged.value?.discard();
        throw appended.status === "rejected" ? appended.reason : (staged as PromiseRejectedResult).reason;
      }
      await staged.value?.publish({ syncDirectory: false });
      this.#keep(path, { handle, ino, dev, end: size + bytes.byteLength, unsynced: false });
      kept = true;
    } catch (error) {
      // A full disk can take part of the lines: cut them off again so the transcript never holds a
      // half-written line, and the caller (who gets the error) may append the same messages later.
      await (async () => {
        await handle.truncate(size);
        await handle.sync();
        if (newFile) await fsyncDirectory(dirname(path));
      })().catch((truncateError: unknown) =>
        this.#logger.error(
          { key, path, err: truncateError },
          "could not cut a failed append off the transcript",
        ),
      );
      throw error;
    } finally {
      if (!kept) await handle.close().catch(() => {});
    }
  }

  async sync(path: string): Promise<void> {
    this.#throwFailedSync(path);
    const kept = this.#openTranscripts.get(path);
    if (kept === undefined || kept.unsynced === false) return;
    this.#openTranscripts.delete(path);
    try {
      await this.#syncEntry(path, kept);
    } catch (error) {
      await kept.handle.close().catch(() => {});
      throw error;
    }
    this.#keep(path, { ...kept, unsynced: false });
  }

  async openForReading(
    path: string,
  ): Promise<{ readonly handle: FileHandle; readonly size: number } | undefined> {
    // A new session has no transcript: answered without the thread pool (see `isMissing`).
    if (isMissing(path)) return undefined;
    try {
      const handle = await open(path, "r");
      try {
        return { handle, size: (await handle.stat()).size };
      } catch (error) {
        await handle.close().catch(() => {});
        throw error;
      }
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) return undefined;
      throw error;
    }
  }

  async *read(
    key: string,
    path: string,
    handle: FileHandle,
    start: number,
    end: number,
  ): AsyncGenerator<Message> {
    if (end <= start) return;
    const stream = handle.createReadStream({ start, end: end - 1, autoClose: false });
    try {
      let pending: { text: string; number: number } | undefined;
      let number = 0;
      for await (const text of linesOf(stream)) {
        number += 1;
        if (pending !== undefined) {
          const message = this.#parseLine(key, path, pending.text, pending.number, false);
          if (message !== undefined) yield message;
        }
        pending = { text, number };
      }
      if (pending !== undefined) {
        const message = this.#parseLine(key, path, pending.text, pending.number, true);
        if (message !== undefined) yield message;
      }
    } finally {
      stream.destroy();
    }
  }

  async keyOf(path: string): Promise<string | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) return undefined;
      throw error;
    }
    const stream = handle.createReadStream({ autoClose: false });
    try {
      for await (const text of linesOf(stream)) {
        const checked = transcriptLineSchema.safeParse(parseJson(text));
        if (checked.success) return checked.data.key;
      }
      return undefined;
    } finally {
      stream.destroy();
      await handle.close();
    }
  }

  async drop(path: string): Promise<void> {
    const kept = this.#openTranscripts.get(path);
    this.#openTranscripts.delete(path);
    if (kept !== undefined) await this.#release(path, kept);
    // The file is moved or removed: a failure of its lines is not the next transcript's.
    this.#failedSyncs.delete(path);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const kept = [...this.#openTranscripts];
    this.#openTranscripts.clear();
    await Promise.all(kept.map(([path, entry]) => this.#release(path, entry)));
  }

  /**
   * The transcript's append handle, kept open between appends (up to {@link MAX_OPEN_TRANSCRIPTS}, least
   * recently used closed first) so a turn's appends skip open, close and the torn-line check. Taken out of the
   * cache while in use; a kept handle whose file was replaced or removed meanwhile is closed and reopened.
   */
  async #take(path: string): Promise<{
    handle: FileHandle;
    ino: number;
    dev: number;
    size: number;
    end: number | undefined;
    unsynced: OpenTranscript["unsynced"];
  }> {
    this.#throwFailedSync(path);
    const kept = this.#openTranscripts.get(path);
    this.#openTranscripts.delete(path);
    if (kept !== undefined) {
      // One stat of the path: the same file (device and inode) as the kept handle's means its size is ours too.
      // Blocking: a stat of a file just written is cheap in the kernel and needs no trip through the thread pool.
      let onDisk: { ino: number; dev: number; size: number } | undefined;
      try {
        onDisk = statSync(path, { throwIfNoEntry: false });
      } catch (error) {
        await kept.handle.close().catch(() => {});
        throw error;
      }
      if (onDisk !== undefined && onDisk.ino === kept.ino && onDisk.dev === kept.dev)
        return { ...kept, size: onDisk.size };
      // Replaced or removed behind our back: what we left unsynced is in a file that is no longer the transcript.
      await this.#release(path, kept);
    }
    const handle = await open(path, "a+", PRIVATE_FILE_MODE);
    try {
      // Blocking, as the stat above: a trip through the pool would queue behind every other session's fsync.
      const { ino, dev, size } = fstatSync(handle.fd);
      return { handle, ino, dev, size, end: undefined, unsynced: false };
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  }

  #keep(path: string, entry: OpenTranscript): void {
    if (this.#closed) {
      void this.#release(path, entry);
      return;
    }
    this.#openTranscripts.set(path, entry);
    for (const [oldest, evicted] of this.#openTranscripts) {
      if (this.#openTranscripts.size <= MAX_OPEN_TRANSCRIPTS) break;
      this.#openTranscripts.delete(oldest);
      void this.#release(oldest, evicted);
    }
  }

  /** Rethrows (once) the error of a failed fsync of lines written to `path` before. */
  #throwFailedSync(path: string): void {
    if (!this.#failedSyncs.has(path)) return;
    const failed = this.#failedSyncs.get(path);
    this.#failedSyncs.delete(path);
    throw failed;
  }

  /** Fsyncs what `entry` left unsynced (remembering a failure for the next append to `path`). */
  async #syncEntry(path: string, entry: OpenTranscript): Promise<void> {
    if (entry.unsynced === false) return;
    try {
      await entry.handle.sync();
      if (entry.unsynced === "new file") await fsyncDirectory(dirname(path));
    } catch (error) {
      this.#failedSyncs.set(path, error);
      this.#logger.error({ path, err: error }, "could not fsync transcript lines written before");
      throw error;
    }
  }

  /** Closes a handle taken out of the cache, fsyncing first what it left unsynced. */
  async #release(path: string, entry: OpenTranscript): Promise<void> {
    await this.#syncEntry(path, entry).catch(() => {});
    // Already closed or gone with the file: nothing is lost (what it held was fsynced or reported above).
    await entry.handle.close().catch(() => {});
  }

  /** The message of one transcript line of `key`; undefined (with a warning) when it cannot be read. */
  #parseLine(
    key: string,
    path: string,
    text: string,
    lineNumber: number,
    isLast: boolean,
  ): Message | undefined {
    if (text.trim() === "") return undefined;
    const checked = transcriptLineSchema.safeParse(parseJson(text));
    const reason = !checked.success
      ? describeIssues(checked.error)
      : checked.data.key !== key
        ? `it belongs to session ${checked.data.key}`
        : undefined;
    if (checked.success && reason === undefined) return checked.data.message;
    this.#logger.warn(
      { key, path, line: lineNumber, reason },
      isLast
        ? "skipping torn final transcript line (probably a crash mid-append)"
        : "skipping unreadable transcript line",
    );
    return undefined;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Writes `bytes` at the end of the transcript (opened for appending), blocking: the lines go into the page cache
 * in microseconds, where a write through the thread pool costs the main thread more than the write itself; the
 * fsync stays in the pool (docs/decisions/0008-turn-io-measured.md).
 */
function appendBlocking(handle: FileHandle, bytes: Buffer): void {
  for (let written = 0; written < bytes.byteLength; )
    written += writeSync(handle.fd, bytes, written, bytes.byteLength - written);
}
