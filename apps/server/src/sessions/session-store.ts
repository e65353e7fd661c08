import { rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { isErrnoCode, type Logger, type Message, sessionKeyToFileStem, silentLogger } from "@almanac/core";
import {
  fsyncDirectory,
  makeDirectoryIn,
  removeStaleTempFiles,
  stageFileDurably,
  writeFileDurably,
} from "@almanac/durable-write";
import { fileTimestamp, firstFreePaths, pathExists, readTextIfExists } from "./file-helpers.js";
import { createKeyedMutex } from "./keyed-mutex.js";
import type {
  AppendDurability,
  LoadResult,
  MissingOrMovedAside,
  SessionStore,
  SessionSummary,
} from "./session.js";
import { listSessions } from "./session-listing.js";
import { checkSnapshot, type SessionSnapshot } from "./session-snapshot.js";
import { parseSnapshot, serializeSnapshot } from "./snapshot-file.js";
import { createTranscriptFiles, encodeTranscriptLines, type TranscriptFiles } from "./transcript-file.js";

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

/** Snapshots hold conversations: readable by the server's user only, like the transcripts. */
const SNAPSHOT_MODE = { mode: 0o600 } as const;

/**
 * Creates a {@link SessionStore} over plain files in `options.dir`: `<stem>.json` holds the latest snapshot
 * (replaced atomically, recording the transcript's size), `<stem>.jsonl` the append-only transcript (see
 * `transcript-file.ts`). All operations on one key run one at a time, in call order.
 */
export function createSessionStore(options: SessionStoreOptions): SessionStore {
  const store = new FileSessionStore(options);
  // A plain object, not the instance: callers spread the store to wrap some of its methods (the sessions
  // plugin's `guardedStore`), and a spread copies own properties only, never a class's methods.
  return {
    save: (snapshot) => store.save(snapshot),
    commit: (snapshot, messages) => store.commit(snapshot, messages),
    load: (key) => store.load(key),
    moveAside: (key, reason) => store.moveAside(key, reason),
    appendTranscript: (key, messages, durability) => store.appendTranscript(key, messages, durability),
    readTranscript: (key) => store.readTranscript(key),
    list: () => store.list(),
    archive: (key) => store.archive(key),
    delete: (key) => store.delete(key),
    close: () => store.close(),
  };
}

/** {@link SessionStore} over the files of one directory; each key's work runs under its lock of `#mutex`. */
class FileSessionStore implements SessionStore {
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #clock: { now(): number };
  readonly #archiveDir: string;
  readonly #mutex = createKeyedMutex();
  readonly #transcripts: TranscriptFiles;
  readonly #deferredSyncMs: number;
  /** The pending deferred fsync of each key with `"written"` lines. */
  readonly #syncTimers = new Map<string, NodeJS.Timeout>();
  #prepared: Promise<void> | undefined;

  constructor(options: SessionStoreOptions) {
    this.#dir = options.dir;
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? Date;
    this.#archiveDir = join(this.#dir, "archive");
    this.#transcripts = createTranscriptFiles(this.#logger);
    this.#deferredSyncMs = options.deferredSyncMs ?? DEFERRED_SYNC_MS;
  }

  save(snapshot: SessionSnapshot): Promise<void> {
    return this.#commit(snapshot, []);
  }

  commit(snapshot: SessionSnapshot, messages: readonly Message[]): Promise<void> {
    return this.#commit(snapshot, messages);
  }

  load(key: string): Promise<LoadResult> {
    return this.#withKey(key, async (stem): Promise<LoadResult> => {
      const text = await readTextIfExists(this.#snapshotPath(stem));
      if (text === undefined) return { status: "missing" };
      const parsed = parseSnapshot(text);
      if (typeof parsed === "string") return this.#moveAside(stem, parsed, key);
      if (parsed.key !== key) return this.#moveAside(stem, `it belongs to session ${parsed.key}`, key);
      const recorded = parsed.transcriptBytes;
      if (recorded === undefined)
        return { status: "ok", snapshot: parsed, unseen: [], transcriptBehind: false };
      const path = this.#transcriptPath(stem);
      const size = await sizeOf(path);
      const unseen: Message[] = [];
      if (size > recorded) {
        const opened = await this.#transcripts.openForReading(path);
        if (opened !== undefined) {
          try {
            const { handle } = opened;
            for await (const message of this.#transcripts.read(key, path, handle, recorded, size))
              unseen.push(message);
          } finally {
            await opened.handle.close();
          }
        }
      }
      return { status: "ok", snapshot: parsed, unseen, transcriptBehind: size < recorded };
    });
  }

  moveAside(key: string, reason: string): Promise<MissingOrMovedAside> {
    return this.#withKey(key, async (stem) => {
      if (!(await pathExists(this.#snapshotPath(stem)))) return { status: "missing" } as const;
      return this.#moveAside(stem, reason, key);
    });
  }

  async appendTranscript(
    key: string,
    messages: readonly Message[],
    durability: AppendDurability = "synced",
  ): Promise<void> {
    const lines = encodeTranscriptLines(key, messages);
    await this.#withKey(key, async (stem) => {
      const path = this.#transcriptPath(stem);
      if (durability === "synced") {
        if (lines.length > 0) await this.#transcripts.append(key, path, lines);
        else await this.#transcripts.sync(path);
        this.#synced(key);
      } else if (lines.length > 0) {
        await this.#transcripts.append(key, path, lines, { deferSync: true });
        this.#syncSoon(key);
      }
    });
  }

  readTranscript(key: string): AsyncIterable<Message> {
    return this.#readTranscriptLines(key);
  }

  async list(): Promise<SessionSummary[]> {
    await this.#prepare();
    return listSessions({
      dir: this.#dir,
      logger: this.#logger,
      transcriptKeyOf: (stem) => this.#transcripts.keyOf(this.#transcriptPath(stem)),
      readTranscript: (key) => this.#readTranscriptLines(key),
    });
  }

  archive(key: string): Promise<string[]> {
    return this.#withKey(key, async (stem) => {
      await this.#transcripts.drop(this.#transcriptPath(stem));
      const sources = [this.#snapshotPath(stem), this.#transcriptPath(stem)];
      const present = (await Promise.all(sources.map(pathExists))).some(Boolean);
      if (!present) return [];
      await makeDirectoryIn(this.#archiveDir);
      const base = join(this.#archiveDir, `${stem}-${fileTimestamp(this.#clock.now())}`);
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
      await fsyncDirectory(this.#archiveDir);
      await fsyncDirectory(this.#dir);
      this.#logger.info({ key, files: moved }, "archived session");
      return moved;
    });
  }

  close(): Promise<void> {
    for (const timer of this.#syncTimers.values()) clearTimeout(timer);
    this.#syncTimers.clear();
    // Closing fsyncs what is still unsynced.
    return this.#transcripts.close();
  }

  delete(key: string): Promise<boolean> {
    return this.#withKey(key, async (stem) => {
      await this.#transcripts.drop(this.#transcriptPath(stem));
      let removed = false;
      for (const path of [this.#snapshotPath(stem), this.#transcriptPath(stem)]) {
        try {
          await unlink(path);
          removed = true;
        } catch (error) {
          if (!isErrnoCode(error, "ENOENT")) throw error;
        }
      }
      if (removed) await fsyncDirectory(this.#dir);
      return removed;
    });
  }

  async #commit(snapshot: SessionSnapshot, messages: readonly Message[]): Promise<void> {
    const checked = checkSnapshot(snapshot);
    const lines = encodeTranscriptLines(snapshot.key, messages);
    await this.#withKey(snapshot.key, async (stem) => {
      if (lines.length === 0) {
        // The snapshot records the transcript's size: what it counts must be on disk first.
        await this.#transcripts.sync(this.#transcriptPath(stem));
        const transcriptBytes = await sizeOf(this.#transcriptPath(stem));
        await writeFileDurably(
          this.#snapshotPath(stem),
          serializeSnapshot({ ...checked, transcriptBytes }),
          SNAPSHOT_MODE,
        );
        this.#synced(snapshot.key);
        return;
      }
      await this.#transcripts.append(snapshot.key, this.#transcriptPath(stem), lines, {
        alongside: (transcriptBytes) =>
          stageFileDurably(
            this.#snapshotPath(stem),
            serializeSnapshot({ ...checked, transcriptBytes }),
            SNAPSHOT_MODE,
          ),
      });
      this.#synced(snapshot.key);
    });
  }

  /** Fsyncs the key's `"written"` lines after {@link SessionStoreOptions.deferredSyncMs}, unless already pending. */
  #syncSoon(key: string): void {
    if (this.#syncTimers.has(key)) return;
    const timer = setTimeout(() => {
      this.#syncTimers.delete(key);
      // A failure is logged by the transcript files, and the key's next append rejects with it.
      this.#withKey(key, (stem) => this.#transcripts.sync(this.#transcriptPath(stem))).catch(() => {});
    }, this.#deferredSyncMs);
    timer.unref();
    this.#syncTimers.set(key, timer);
  }

  /** A synced write of the key covered its `"written"` lines: no deferred fsync is due. */
  #synced(key: string): void {
    clearTimeout(this.#syncTimers.get(key));
    this.#syncTimers.delete(key);
  }

  // Creates the directory and sweeps temp files left by a crash mid-save (they never hold the only copy of
  // anything: the rename that would have published them did not happen).
  #prepare(): Promise<void> {
    this.#prepared ??= (async () => {
      // Inside a data directory that must exist: one that vanished is an error, not made again empty.
      await makeDirectoryIn(this.#dir);
      const removed = await removeStaleTempFiles(this.#dir);
      if (removed.length > 0)
        this.#logger.warn(
          { dir: this.#dir, files: removed },
          "removed temp files left by an interrupted save",
        );
    })().catch((error: unknown) => {
      this.#prepared = undefined;
      throw error;
    });
    return this.#prepared;
  }

  #withKey<T>(key: string, work: (stem: string) => Promise<T>): Promise<T> {
    const stem = sessionKeyToFileStem(key);
    return this.#mutex.run(key, async () => {
      await this.#prepare();
      return work(stem);
    });
  }

  #snapshotPath(stem: string): string {
    return join(this.#dir, `${stem}.json`);
  }

  #transcriptPath(stem: string): string {
    return join(this.#dir, `${stem}.jsonl`);
  }

  async #moveAside(stem: string, reason: string, key: string): Promise<MissingOrMovedAside> {
    const stamp = fileTimestamp(this.#clock.now());
    const [movedTo = ""] = await firstFreePaths((suffix) => [
      `${this.#snapshotPath(stem)}.corrupt-${stamp}${suffix}`,
    ]);
    await rename(this.#snapshotPath(stem), movedTo);
    await fsyncDirectory(this.#dir);
    this.#logger.warn({ key, reason, movedTo }, "session snapshot is corrupt; moved it aside");
    return { status: "corrupt", reason, movedTo };
  }

  async *#readTranscriptLines(key: string): AsyncGenerator<Message> {
    // Open and measure under the key's lock, then read without it: appends that finish later are not
    // seen (no half-written line), and a slow consumer never holds up the session.
    const opened = await this.#withKey(key, async (stem) => {
      const path = this.#transcriptPath(stem);
      const file = await this.#transcripts.openForReading(path);
      return file && { ...file, path };
    });
    if (opened === undefined) return;
    const { handle, path, size } = opened;
    try {
      yield* this.#transcripts.read(key, path, handle, 0, size);
    } finally {
      await handle.close();
    }
  }
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
