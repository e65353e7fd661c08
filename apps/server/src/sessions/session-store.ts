import { mkdir, readdir, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import {
  fsyncDirectory,
  isErrnoCode,
  type Logger,
  type Message,
  PRIVATE_DIRECTORY_MODE,
  parseSessionKey,
  removeStaleTempFiles,
  sessionKeyToFileStem,
  silentLogger,
  stageFileDurably,
  writeFileDurably,
} from "@almanac/core";
import { fileTimestamp, firstFreePaths, pathExists, readTextIfExists } from "./file-helpers.js";
import { createKeyedMutex } from "./keyed-mutex.js";
import type { LoadResult, MissingOrMovedAside, SessionStore, SessionSummary } from "./session.js";
import { checkSnapshot, type SessionSnapshot, sessionTitle } from "./session-snapshot.js";
import { parseSnapshot, serializeSnapshot } from "./snapshot-file.js";
import { transcriptFacts } from "./transcript-facts.js";
import { createTranscriptFiles, encodeTranscriptLines } from "./transcript-file.js";

export type { SessionStore } from "./session.js";

/** Options of {@link createSessionStore}. */
export interface SessionStoreOptions {
  /** The sessions directory (usually `<ALMANAC_HOME>/sessions`); created on first use. One store per directory. */
  readonly dir: string;
  readonly logger?: Logger;
  /** Time source for the timestamps in `.corrupt-*` and archive file names. */
  readonly clock?: { now(): number };
  /**
   * How long a `"written"` append may stay unsynced before the store fsyncs it (default
   * {@link DEFERRED_SYNC_MS}); a synced append or checkpoint of the session syncs it earlier.
   */
  readonly deferredSyncMs?: number;
}

/**
 * The default of {@link SessionStoreOptions.deferredSyncMs}: a turn over a fast model ends before it, with one
 * synced write for all it wrote; a slow model call does not leave what the user said unsynced for long.
 */
export const DEFERRED_SYNC_MS = 200;

const LIST_BATCH_SIZE = 32;

/** Snapshots hold conversations: readable by the server's user only, like the transcripts. */
const SNAPSHOT_MODE = { mode: 0o600 } as const;

/**
 * Creates a {@link SessionStore} over plain files in `options.dir`: `<stem>.json` holds the latest snapshot
 * (replaced atomically, recording the transcript's size), `<stem>.jsonl` the append-only transcript (see
 * `transcript-file.ts`). All operations on one key run one at a time, in call order.
 */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const { dir } = options;
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? Date;
  const archiveDir = join(dir, "archive");
  const mutex = createKeyedMutex();
  const transcripts = createTranscriptFiles(logger);
  const deferredSyncMs = options.deferredSyncMs ?? DEFERRED_SYNC_MS;
  /** The pending deferred fsync of each key with `"written"` lines. */
  const syncTimers = new Map<string, NodeJS.Timeout>();
  let prepared: Promise<void> | undefined;

  /** Fsyncs the key's `"written"` lines after {@link deferredSyncMs}, unless already pending. */
  function syncSoon(key: string): void {
    if (syncTimers.has(key)) return;
    const timer = setTimeout(() => {
      syncTimers.delete(key);
      // A failure is logged by the transcript files, and the key's next append rejects with it.
      withKey(key, (stem) => transcripts.sync(transcriptPath(stem))).catch(() => {});
    }, deferredSyncMs);
    timer.unref();
    syncTimers.set(key, timer);
  }

  /** A synced write of the key covered its `"written"` lines: no deferred fsync is due. */
  function synced(key: string): void {
    clearTimeout(syncTimers.get(key));
    syncTimers.delete(key);
  }

  // Creates the directory and sweeps temp files left by a crash mid-save (they never hold the only copy of
  // anything: the rename that would have published them did not happen).
  function prepare(): Promise<void> {
    prepared ??= (async () => {
      await mkdir(dir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
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

  async function moveAside(stem: string, reason: string, key: string): Promise<MissingOrMovedAside> {
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

  async function commit(snapshot: SessionSnapshot, messages: readonly Message[]): Promise<void> {
    const checked = checkSnapshot(snapshot);
    const lines = encodeTranscriptLines(snapshot.key, messages);
    await withKey(snapshot.key, async (stem) => {
      if (lines.length === 0) {
        // The snapshot records the transcript's size: what it counts must be on disk first.
        await transcripts.sync(transcriptPath(stem));
        const transcriptBytes = await sizeOf(transcriptPath(stem));
        await writeFileDurably(
          snapshotPath(stem),
          serializeSnapshot({ ...checked, transcriptBytes }),
          SNAPSHOT_MODE,
        );
        synced(snapshot.key);
        return;
      }
      await transcripts.append(snapshot.key, transcriptPath(stem), lines, {
        alongside: (transcriptBytes) =>
          stageFileDurably(
            snapshotPath(stem),
            serializeSnapshot({ ...checked, transcriptBytes }),
            SNAPSHOT_MODE,
          ),
      });
      synced(snapshot.key);
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
          const opened = await transcripts.openForReading(path);
          if (opened !== undefined) {
            try {
              const { handle } = opened;
              for await (const message of transcripts.read(key, path, handle, recorded, size))
                unseen.push(message);
            } finally {
              await opened.handle.close();
            }
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

    async appendTranscript(key, messages, durability = "synced") {
      const lines = encodeTranscriptLines(key, messages);
      await withKey(key, async (stem) => {
        const path = transcriptPath(stem);
        if (durability === "synced") {
          if (lines.length > 0) await transcripts.append(key, path, lines);
          else await transcripts.sync(path);
          synced(key);
        } else if (lines.length > 0) {
          await transcripts.append(key, path, lines, { deferSync: true });
          syncSoon(key);
        }
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
        await transcripts.drop(transcriptPath(stem));
        const sources = [snapshotPath(stem), transcriptPath(stem)];
        const present = (await Promise.all(sources.map(pathExists))).some(Boolean);
        if (!present) return [];
        await mkdir(archiveDir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
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

    close: () => {
      for (const timer of syncTimers.values()) clearTimeout(timer);
      syncTimers.clear();
      // Closing fsyncs what is still unsynced.
      return transcripts.close();
    },

    delete(key) {
      return withKey(key, async (stem) => {
        await transcripts.drop(transcriptPath(stem));
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
    const key = await transcripts.keyOf(transcriptPath(stem));
    if (key === undefined || safeStem(key) !== stem) return undefined;
    const messages: Message[] = [];
    for await (const message of readTranscriptLines(key)) messages.push(message);
    const facts = transcriptFacts(messages);
    if (facts === undefined) return undefined;
    const { createdAt, lastActivity, turns, messageCount } = facts;
    const title = sessionTitle(messages);
    return {
      key,
      stem,
      createdAt,
      updatedAt: lastActivity,
      stats: {
        turns,
        compactions: 0,
        lastActivity,
        channel: parseSessionKey(key).channel,
        messageCount,
        ...(title === undefined ? {} : { title }),
      },
    };
  }

  async function* readTranscriptLines(key: string): AsyncGenerator<Message> {
    // Open and measure under the key's lock, then read without it: appends that finish later are not
    // seen (no half-written line), and a slow consumer never holds up the session.
    const opened = await withKey(key, async (stem) => {
      const path = transcriptPath(stem);
      const file = await transcripts.openForReading(path);
      return file && { ...file, path };
    });
    if (opened === undefined) return;
    const { handle, path, size } = opened;
    try {
      yield* transcripts.read(key, path, handle, 0, size);
    } finally {
      await handle.close();
    }
  }
}

function safeStem(key: string): string | undefined {
  try {
    return sessionKeyToFileStem(key);
  } catch {
    return undefined;
  }
}
