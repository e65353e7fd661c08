import { type FileHandle, mkdir, open, readdir, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import {
  fsyncDirectory,
  InternalError,
  isErrnoCode,
  type Logger,
  type Message,
  messageSchema,
  parseSessionKey,
  removeStaleTempFiles,
  type StagedFile,
  sessionKeyToFileStem,
  silentLogger,
  stageFileDurably,
  writeFileDurably,
} from "@almanac/core";
import type { z } from "zod";
import { fileTimestamp, firstFreePaths, pathExists, readTextIfExists } from "./file-helpers.js";
import { createKeyedMutex } from "./keyed-mutex.js";
import {
  type SessionSnapshot,
  type SessionStats,
  sessionSnapshotSchema,
  transcriptLineSchema,
} from "./session-snapshot.js";
import { transcriptFacts } from "./transcript-facts.js";

/** Options of {@link createSessionStore}. */
export interface SessionStoreOptions {
  /** The sessions directory (usually `<ALMANAC_HOME>/sessions`); created on first use. One store per directory. */
  readonly dir: string;
  readonly logger?: Logger;
  /** Time source for the timestamps in `.corrupt-*` and archive file names. */
  readonly clock?: { now(): number };
}

/** Outcome of {@link SessionStore.load}. */
export type LoadResult =
  | { readonly status: "missing" }
  | {
      readonly status: "ok";
      readonly snapshot: SessionSnapshot;
      /**
       * Messages the transcript got after the snapshot was written (see `SessionSnapshot.transcriptBytes`):
       * the turn the previous process died in. Empty when the two agree.
       */
      readonly unseen: readonly Message[];
      /**
       * The transcript is shorter than when the snapshot was written (lost or cut by hand): the snapshot may
       * hold messages the transcript lacks.
       */
      readonly transcriptBehind: boolean;
    }
  /** The snapshot was unreadable and has been moved aside; rebuild the session from its transcript. */
  | { readonly status: "corrupt"; readonly reason: string; readonly movedTo: string };

/** One stored session, as {@link SessionStore.list} reports it. */
export interface SessionSummary {
  readonly key: string;
  /** File-name stem of the session's files (see `sessionKeyToFileStem`). */
  readonly stem: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly stats: SessionStats;
}

/**
 * Session state on disk: `<dir>/<stem>.json` holds the latest snapshot (replaced atomically),
 * `<dir>/<stem>.jsonl` the append-only transcript, one `{"key":…,"message":…}` object per line
 * (the key tags each line so a stray or concatenated file can still be attributed).
 * All operations on one key run one at a time, in call order.
 */
export interface SessionStore {
  /** Replaces the key's snapshot atomically: after a crash the old or the new snapshot is there, whole. */
  save(snapshot: SessionSnapshot): Promise<void>;
  /**
   * Appends `messages` to the transcript and replaces the snapshot, waiting for both fsyncs at once (a turn's
   * end costs one disk wait, not four in a row). The snapshot is put in place only after both are on disk; on
   * failure neither changed (the appended lines are cut off again), so the caller may commit the same later.
   * A power loss at any point leaves a snapshot whose transcript holds at least what it records.
   */
  commit(snapshot: SessionSnapshot, messages: readonly Message[]): Promise<void>;
  /** Reads the key's snapshot; a corrupt one is moved to `<stem>.json.corrupt-<time>` and reported. */
  load(key: string): Promise<LoadResult>;
  /**
   * Moves the key's snapshot aside as {@link load} does with a corrupt one, for a caller that found its
   * content unusable (e.g. working memory of the wrong shape); "missing" when there is none.
   */
  moveAside(key: string, reason: string): Promise<Exclude<LoadResult, { status: "ok" }>>;
  /** Appends messages to the key's transcript and fsyncs before resolving. */
  appendTranscript(key: string, messages: readonly Message[]): Promise<void>;
  /**
   * Streams the key's transcript as it was when reading started; nothing if there is none.
   * Unreadable lines (such as a final line torn by a crash mid-append) are skipped with a warning.
   */
  readTranscript(key: string): AsyncIterable<Message>;
  /**
   * Every session, most recently updated first. A session whose snapshot is missing or unreadable is listed
   * from its transcript (the source of truth); an unreadable snapshot without a transcript is skipped with a warning.
   */
  list(): Promise<SessionSummary[]>;
  /** Moves the key's snapshot and transcript to `<dir>/archive/<stem>-<time>.json[l]` (for a reset); returns the new paths. */
  archive(key: string): Promise<string[]>;
  /** Removes the key's snapshot and transcript for good; returns whether anything was there. */
  delete(key: string): Promise<boolean>;
  /**
   * Closes the transcripts kept open for appending (for shutdown: nothing stays open in the data directory).
   * The store still works afterwards; each append then opens and closes its file.
   */
  close(): Promise<void>;
}

const LIST_BATCH_SIZE = 32;

/** Snapshots hold conversations: readable by the server's user only, like the transcripts. */
const SNAPSHOT_MODE = { mode: 0o600 } as const;

/** Transcripts kept open for appending: about the sessions active at once (each costs one file descriptor). */
const MAX_OPEN_TRANSCRIPTS = 64;

/** A transcript's kept append handle and the file size right after our last append through it. */
interface OpenTranscript {
  readonly handle: FileHandle;
  readonly end: number;
}

/** Creates a {@link SessionStore} over plain files in `options.dir`. */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const { dir } = options;
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? Date;
  const archiveDir = join(dir, "archive");
  const mutex = createKeyedMutex();
  const openTranscripts = new Map<string, OpenTranscript>();
  let closed = false;
  let prepared: Promise<void> | undefined;

  // Creates the directory and sweeps temp files left by a crash mid-save (they never hold the only copy of
  // anything: the rename that would have published them did not happen).
  function prepare(): Promise<void> {
    prepared ??= (async () => {
      await mkdir(dir, { recursive: true });
      const removed = await removeStaleTempFiles(dir);
      if (removed.length > 0)
        logger.warn({ dir, files: removed }, "removed temp files left by an interrupted save");
    })().catch((error: unknown) => {
      prepared = undefined;
      throw error;
    });
    return prepared;
  }

  function withKey<T>(key: string, work: (stem: string) => Promise<T>): Promise<T> {
    const stem = sessionKeyToFileStem(key);
    return mutex.run(key, async () => {
      await prepare();
      return work(stem);
    });
  }

  const snapshotPath = (stem: string): string => join(dir, `${stem}.json`);
  const transcriptPath = (stem: string): string => join(dir, `${stem}.jsonl`);

  async function moveAside(
    stem: string,
    reason: string,
    key: string,
  ): Promise<Exclude<LoadResult, { status: "ok" }>> {
    const stamp = fileTimestamp(clock.now());
    const [movedTo = ""] = await firstFreePaths((suffix) => [
      `${snapshotPath(stem)}.corrupt-${stamp}${suffix}`,
    ]);
    await rename(snapshotPath(stem), movedTo);
    await fsyncDirectory(dir);
    logger.warn({ key, reason, movedTo }, "session snapshot is corrupt; moved it aside");
    return { status: "corrupt", reason, movedTo };
  }

  /** The size of a file in bytes; 0 when there is none. */
  async function sizeOf(path: string): Promise<number> {
    try {
      return (await stat(path)).size;
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) return 0;
      throw error;
    }
  }

  /**
   * The transcript's append handle, kept open between appends (up to {@link MAX_OPEN_TRANSCRIPTS}, least
   * recently used closed first) so a turn's appends skip open, close and the torn-line check. Taken out of the
   * cache while in use; a kept handle whose file was replaced or removed meanwhile is closed and reopened.
   */
  async function takeTranscript(
    stem: string,
    path: string,
  ): Promise<{ handle: FileHandle; size: number; end: number | undefined }> {
    const kept = openTranscripts.get(stem);
    openTranscripts.delete(stem);
    if (kept !== undefined) {
      const [onDisk, opened] = await Promise.all([
        stat(path).catch((error: unknown) => {
          if (isErrnoCode(error, "ENOENT")) return undefined;
          throw error;
        }),
        kept.handle.stat(),
      ]).catch(async (error: unknown) => {
        await kept.handle.close().catch(() => {});
        throw error;
      });
      if (onDisk !== undefined && onDisk.ino === opened.ino && onDisk.dev === opened.dev)
        return { handle: kept.handle, size: opened.size, end: kept.end };
      await kept.handle.close().catch(() => {});
    }
    const handle = await open(path, "a+", 0o600);
    try {
      return { handle, size: (await handle.stat()).size, end: undefined };
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  }

  function keepTranscript(stem: string, entry: OpenTranscript): void {
    if (closed) {
      void entry.handle.close().catch(() => {});
      return;
    }
    openTranscripts.set(stem, entry);
    for (const [oldest, { handle }] of openTranscripts) {
      if (openTranscripts.size <= MAX_OPEN_TRANSCRIPTS) break;
      openTranscripts.delete(oldest);
      void handle.close().catch(() => {});
    }
  }

  /** Closes the key's kept append handle (before its transcript is moved or removed). */
  async function dropTranscript(stem: string): Promise<void> {
    const kept = openTranscripts.get(stem);
    openTranscripts.delete(stem);
    await kept?.handle.close().catch(() => {});
  }

  /**
   * Appends `lines` to the key's transcript and fsyncs it. With `alongside`, that other file (given the
   * transcript's size after the append) is staged while the transcript is written, both fsyncs are awaited
   * together, and it is published after both; on any failure the appended lines are cut off again.
   */
  async function appendLines(
    key: string,
    stem: string,
    lines: readonly string[],
    alongside?: (sizeAfter: number) => Promise<StagedFile>,
  ): Promise<void> {
    const path = transcriptPath(stem);
    const { handle, size: current, end } = await takeTranscript(stem, path);
    const size: number | undefined = current;
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
          logger.warn({ key, path }, "transcript ended with a torn line; starting a new line after it");
        }
      }
      const text = `${prefix}${lines.join("\n")}\n`;
      const staging = alongside?.(size + Buffer.byteLength(text, "utf8"));
      const appending = (async () => {
        await handle.appendFile(text, "utf8");
        await handle.sync();
      })();
      const [appended, staged] = await Promise.allSettled([appending, staging]);
      if (appended.status === "rejected" || staged.status === "rejected") {
        if (staged.status === "fulfilled") await staged.value?.discard();
        throw appended.status === "rejected" ? appended.reason : (staged as PromiseRejectedResult).reason;
      }
      await staged.value?.publish({ syncDirectory: false });
      keepTranscript(stem, { handle, end: size + Buffer.byteLength(text, "utf8") });
      kept = true;
    } catch (error) {
      // A full disk can take part of the lines: cut them off again so the transcript never holds a
      // half-written line, and the caller (who gets the error) may append the same messages later.
      if (size !== undefined) {
        const before = size;
        await (async () => {
          await handle.truncate(before);
          await handle.sync();
        })().catch((truncateError: unknown) =>
          logger.error({ key, path, err: truncateError }, "could not cut a failed append off the transcript"),
        );
      }
      throw error;
    } finally {
      if (!kept) await handle.close().catch(() => {});
    }
    // A new transcript (and a snapshot published beside it) must stay in the directory after a power loss.
    if (size === 0) await fsyncDirectory(dir);
  }

  function transcriptLines(key: string, messages: readonly Message[]): string[] {
    return messages.map((message) => {
      const checked = messageSchema.safeParse(message);
      if (!checked.success) {
        throw new InternalError(
          "session.message_invalid",
          `Refusing to append an invalid message to session ${key}: ${describeIssues(checked.error)}`,
        );
      }
      return JSON.stringify({ key, message });
    });
  }

  async function commit(snapshot: SessionSnapshot, messages: readonly Message[]): Promise<void> {
    const checked = checkSnapshot(snapshot);
    const lines = transcriptLines(snapshot.key, messages);
    await withKey(snapshot.key, async (stem) => {
      if (lines.length === 0) {
        const transcriptBytes = await sizeOf(transcriptPath(stem));
        await writeFileDurably(snapshotPath(stem), serialize({ ...checked, transcriptBytes }), SNAPSHOT_MODE);
        return;
      }
      await appendLines(snapshot.key, stem, lines, (transcriptBytes) =>
        stageFileDurably(snapshotPath(stem), serialize({ ...checked, transcriptBytes }), SNAPSHOT_MODE),
      );
    });
  }

  return {
    save: (snapshot) => commit(snapshot, []),
    commit,

    load(key) {
      return withKey(key, async (stem): Promise<LoadResult> => {
        const text = await readTextIfExists(snapshotPath(stem));
        if (text === undefined) return { status: "missing" };
        const parsed = parseSnapshot(text);
        if (typeof parsed === "string") return moveAside(stem, parsed, key);
        if (parsed.key !== key) return moveAside(stem, `it belongs to session ${parsed.key}`, key);
        const recorded = parsed.transcriptBytes;
        if (recorded === undefined)
          return { status: "ok", snapshot: parsed, unseen: [], transcriptBehind: false };
        const path = transcriptPath(stem);
        const size = await sizeOf(path);
        const unseen: Message[] = [];
        if (size > recorded) {
          const handle = await open(path, "r");
          try {
            for await (const message of linesOf(key, path, handle, recorded, size)) unseen.push(message);
          } finally {
            await handle.close();
          }
        }
        return { status: "ok", snapshot: parsed, unseen, transcriptBehind: size < recorded };
      });
    },

    moveAside(key, reason) {
      return withKey(key, async (stem) => {
        if (!(await pathExists(snapshotPath(stem)))) return { status: "missing" } as const;
        return moveAside(stem, reason, key);
      });
    },

    async appendTranscript(key, messages) {
      const lines = transcriptLines(key, messages);
      await withKey(key, async (stem) => {
        if (lines.length > 0) await appendLines(key, stem, lines);
      });
    },

    readTranscript(key) {
      return readTranscriptLines(key);
    },

    async list() {
      await prepare();
      const entries = (await readdir(dir)).filter((name) => !name.startsWith("."));
      const names = entries.filter((name) => name.endsWith(".json"));
      const summaries: SessionSummary[] = [];
      for (let start = 0; start < names.length; start += LIST_BATCH_SIZE) {
        const batch = names.slice(start, start + LIST_BATCH_SIZE);
        for (const summary of await Promise.all(batch.map(readSummary))) {
          if (summary !== undefined) summaries.push(summary);
        }
      }
      // Transcripts whose snapshot is missing or unreadable: the session is still there (rebuilt on next use).
      const listed = new Set(summaries.map((summary) => summary.stem));
      const orphans = entries
        .filter((name) => name.endsWith(".jsonl"))
        .map((name) => name.slice(0, -".jsonl".length))
        .filter((stem) => !listed.has(stem));
      for (const stem of orphans) {
        const summary = await summaryFromTranscript(stem);
        if (summary !== undefined) summaries.push(summary);
      }
      return summaries.sort(
        (a, b) => b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
      );
    },

    archive(key) {
      return withKey(key, async (stem) => {
        await dropTranscript(stem);
        const sources = [snapshotPath(stem), transcriptPath(stem)];
        const present = (await Promise.all(sources.map(pathExists))).some(Boolean);
        if (!present) return [];
        await mkdir(archiveDir, { recursive: true });
        const base = join(archiveDir, `${stem}-${fileTimestamp(clock.now())}`);
        const targets = await firstFreePaths((suffix) => [`${base}${suffix}.json`, `${base}${suffix}.jsonl`]);
        const moved: string[] = [];
        for (const [index, source] of sources.entries()) {
          const target = targets[index]!;
          try {
            await rename(source, target);
            moved.push(target);
          } catch (error) {
            if (!isErrnoCode(error, "ENOENT")) throw error;
          }
        }
        await fsyncDirectory(archiveDir);
        await fsyncDirectory(dir);
        logger.info({ key, files: moved }, "archived session");
        return moved;
      });
    },

    async close() {
      closed = true;
      const kept = [...openTranscripts.values()];
      openTranscripts.clear();
      await Promise.all(kept.map(({ handle }) => handle.close().catch(() => {})));
    },

    delete(key) {
      return withKey(key, async (stem) => {
        await dropTranscript(stem);
        let removed = false;
        for (const path of [snapshotPath(stem), transcriptPath(stem)]) {
          try {
            await unlink(path);
            removed = true;
          } catch (error) {
            if (!isErrnoCode(error, "ENOENT")) throw error;
          }
        }
        if (removed) await fsyncDirectory(dir);
        return removed;
      });
    },
  };

  async function readSummary(name: string): Promise<SessionSummary | undefined> {
    const stem = name.slice(0, -".json".length);
    const path = join(dir, name);
    let text: string | undefined;
    try {
      text = await readTextIfExists(path);
    } catch (error) {
      logger.warn({ path, reason: String(error) }, "skipping unreadable session snapshot");
      return undefined;
    }
    if (text === undefined) return undefined; // removed since readdir
    const parsed = parseSnapshot(text);
    const problem =
      typeof parsed === "string"
        ? parsed
        : safeStem(parsed.key) !== stem
          ? `its key ${parsed.key} does not belong to this file name`
          : undefined;
    if (problem !== undefined || typeof parsed === "string") {
      logger.warn({ path, reason: problem }, "skipping unreadable session snapshot");
      return undefined;
    }
    const { key, createdAt, updatedAt, stats } = parsed;
    return { key, stem, createdAt, updatedAt, stats };
  }

  /** A session listed from its transcript alone (the key comes from the transcript's own lines). */
  async function summaryFromTranscript(stem: string): Promise<SessionSummary | undefined> {
    const key = await transcriptKey(transcriptPath(stem));
    if (key === undefined || safeStem(key) !== stem) return undefined;
    const messages: Message[] = [];
    for await (const message of readTranscriptLines(key)) messages.push(message);
    const facts = transcriptFacts(messages);
    if (facts === undefined) return undefined;
    const { createdAt, lastActivity, turns, messageCount } = facts;
    return {
      key,
      stem,
      createdAt,
      updatedAt: lastActivity,
      stats: { turns, compactions: 0, lastActivity, channel: parseSessionKey(key).channel, messageCount },
    };
  }

  /** The session key of the first readable line of a transcript file. */
  async function transcriptKey(path: string): Promise<string | undefined> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(path, "r");
    } catch (error) {
      if (isErrnoCode(error, "ENOENT")) return undefined;
      throw error;
    }
    const stream = handle.createReadStream({ autoClose: false });
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    try {
      for await (const text of lines) {
        const checked = transcriptLineSchema.safeParse(parseJson(text));
        if (checked.success) return checked.data.key;
      }
      return undefined;
    } finally {
      lines.close();
      stream.destroy();
      await handle.close();
    }
  }

  async function* readTranscriptLines(key: string): AsyncGenerator<Message> {
    // Open and measure under the key's lock, then read without it: appends that finish later are not
    // seen (no half-written line), and a slow consumer never holds up the session.
    const opened = await withKey(key, async (stem) => {
      const path = transcriptPath(stem);
      try {
        const handle = await open(path, "r");
        return { handle, path, size: (await handle.stat()).size };
      } catch (error) {
        if (isErrnoCode(error, "ENOENT")) return undefined;
        throw error;
      }
    });
    if (opened === undefined) return;
    const { handle, path, size } = opened;
    try {
      yield* linesOf(key, path, handle, 0, size);
    } finally {
      await handle.close();
    }
  }

  /** The messages of a transcript's bytes `start` to `end` (exclusive); unreadable lines are skipped with a warning. */
  async function* linesOf(
    key: string,
    path: string,
    handle: FileHandle,
    start: number,
    end: number,
  ): AsyncGenerator<Message> {
    if (end <= start) return;
    const stream = handle.createReadStream({ start, end: end - 1, autoClose: false });
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    try {
      let pending: { text: string; number: number } | undefined;
      let number = 0;
      for await (const text of lines) {
        number += 1;
        if (pending !== undefined) {
          const message = parseLine(pending.text, pending.number, false);
          if (message !== undefined) yield message;
        }
        pending = { text, number };
      }
      if (pending !== undefined) {
        const message = parseLine(pending.text, pending.number, true);
        if (message !== undefined) yield message;
      }
    } finally {
      lines.close();
      stream.destroy();
    }

    function parseLine(text: string, lineNumber: number, isLast: boolean): Message | undefined {
      if (text.trim() === "") return undefined;
      const checked = transcriptLineSchema.safeParse(parseJson(text));
      const reason = !checked.success
        ? describeIssues(checked.error)
        : checked.data.key !== key
          ? `it belongs to session ${checked.data.key}`
          : undefined;
      if (checked.success && reason === undefined) return checked.data.message;
      logger.warn(
        { key, path, line: lineNumber, reason },
        isLast
          ? "skipping torn final transcript line (probably a crash mid-append)"
          : "skipping unreadable transcript line",
      );
      return undefined;
    }
  }
}

/** The snapshot, validated; throws `session.snapshot_invalid` for one that must not be written. */
function checkSnapshot(snapshot: SessionSnapshot): SessionSnapshot {
  const checked = sessionSnapshotSchema.safeParse(snapshot);
  if (!checked.success) {
    throw new InternalError(
      "session.snapshot_invalid",
      `Refusing to save an invalid snapshot for session ${snapshot.key}: ${describeIssues(checked.error)}`,
    );
  }
  return checked.data;
}

/** Returns the snapshot, or a reason why the text is not one. */
function parseSnapshot(text: string): SessionSnapshot | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return `invalid JSON (${error instanceof Error ? error.message : String(error)})`;
  }
  const checked = sessionSnapshotSchema.safeParse(json);
  return checked.success ? checked.data : `not a session snapshot (${describeIssues(checked.error)})`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * JSON of messages already written once. Messages are immutable (a marked or shortened message is a new
 * object), so a snapshot re-serializes only the messages that are new since the last one, not the history.
 */
const messageJson = new WeakMap<object, string>();

function messageText(message: unknown): string {
  if (typeof message !== "object" || message === null) return JSON.stringify(message);
  let text = messageJson.get(message);
  if (text === undefined) {
    text = JSON.stringify(message);
    messageJson.set(message, text);
  }
  return text;
}

/** The snapshot's JSON (what `JSON.stringify` gives), with each message's JSON reused from earlier saves. */
function snapshotJson(snapshot: SessionSnapshot): string {
  const { memory, ...envelope } = snapshot;
  if (
    typeof memory !== "object" ||
    memory === null ||
    !("messages" in memory) ||
    !Array.isArray(memory.messages)
  )
    return JSON.stringify(snapshot);
  const { messages, ...rest } = memory;
  const restJson = JSON.stringify(rest).slice(1, -1);
  const memoryJson = `{${restJson}${restJson === "" ? "" : ","}"messages":[${messages.map(messageText).join(",")}]}`;
  return `${JSON.stringify(envelope).slice(0, -1)},"memory":${memoryJson}}`;
}

function serialize(snapshot: SessionSnapshot): string {
  try {
    return `${snapshotJson(snapshot)}\n`;
  } catch (error) {
    throw new InternalError(
      "session.snapshot_invalid",
      `Session ${snapshot.key}'s snapshot cannot be written as JSON`,
      { cause: error },
    );
  }
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}

function safeStem(key: string): string | undefined {
  try {
    return sessionKeyToFileStem(key);
  } catch {
    return undefined;
  }
}
