import { InternalError, type Message } from "@almanac/core";
import type { SessionSnapshot, SessionStats } from "./session-snapshot.js";

/** Outcome of {@link Session.load}. */
export type LoadResult =
  | { readonly status: "missing" }
  | {
      readonly status: "ok";
      readonly snapshot: SessionSnapshot;
      /**
       * Messages the transcript got after the snapshot was written (see `SessionSnapshot.transcriptBytes`):
       * turns that ended after the last checkpoint, or the turn the previous process died in. Empty when the
       * two agree.
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

/**
 * How far an append gets before it resolves. `"synced"` (the default): fsynced, so it survives a power loss.
 * `"written"`: in the file, so a crash of the process keeps it, and fsynced shortly after (the store's
 * deferred-sync delay) or by the session's next synced append or checkpoint, whichever comes first. A turn
 * writes what comes before a model call as `"written"` (the model call does not wait for a disk flush) and
 * ends with a synced write, so its answer never leaves before all of it is on disk.
 */
export type AppendDurability = "synced" | "written";

/** No snapshot, or one that was moved aside as unusable. */
export type MissingOrMovedAside = Exclude<LoadResult, { status: "ok" }>;

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
 * One conversation's durable state: an append-only transcript of everything said (the source of truth) and a
 * snapshot checkpoint of the working memory (messages with their marks, summary, counters, stats). This is
 * all a loaded session knows of storage; it never sees a key of another session or a file path.
 * Operations run one at a time, in call order.
 */
export interface Session {
  readonly key: string;
  /** Reads the snapshot and the transcript lines written after it; a corrupt snapshot is moved aside and reported. */
  load(): Promise<LoadResult>;
  /**
   * Appends messages to the transcript, fsynced before resolving unless `durability` is `"written"` (see
   * {@link AppendDurability}). A synced append of no messages fsyncs what earlier written ones left.
   */
  append(messages: readonly Message[], durability?: AppendDurability): Promise<void>;
  /**
   * Appends `messages` (if any) and replaces the snapshot together: after a crash the old or the new snapshot
   * is there, whole, and never ahead of its transcript. On failure neither changed, so the caller may retry.
   */
  checkpoint(snapshot: SessionSnapshot, messages?: readonly Message[]): Promise<void>;
  /**
   * The transcript, oldest first, as it was when reading began. Streamed: a reader pulls it a page at a time
   * and may stop early, so a long history is never held whole. Unreadable lines are skipped with a warning.
   */
  history(): AsyncIterable<Message>;
  /** Moves the snapshot aside as {@link load} does with a corrupt one, for content the caller cannot use. */
  moveAside(reason: string): Promise<MissingOrMovedAside>;
  /** Archives snapshot and transcript (`/new`, a reset): the session starts over; returns where they went. */
  reset(): Promise<string[]>;
  /** Removes snapshot and transcript for good; returns whether anything was there. */
  delete(): Promise<boolean>;
}

/**
 * Where sessions are kept, addressed by key: the storage behind every {@link Session}. Implemented by the
 * file store (`createSessionStore`) and by an in-memory fake for tests (`apps/server/test/support`); both
 * pass `apps/server/test/support/session-store-contract.ts`. All operations on one key run one at a time.
 */
export interface SessionStore {
  /** Replaces the key's snapshot atomically. */
  save(snapshot: SessionSnapshot): Promise<void>;
  /** Appends `messages` to the transcript and replaces the snapshot; see {@link Session.checkpoint}. */
  commit(snapshot: SessionSnapshot, messages: readonly Message[]): Promise<void>;
  /** See {@link Session.load}. */
  load(key: string): Promise<LoadResult>;
  /** See {@link Session.moveAside}; "missing" when there is no snapshot. */
  moveAside(key: string, reason: string): Promise<MissingOrMovedAside>;
  /** See {@link Session.append}. */
  appendTranscript(key: string, messages: readonly Message[], durability?: AppendDurability): Promise<void>;
  /** See {@link Session.history}; nothing if there is no transcript. */
  readTranscript(key: string): AsyncIterable<Message>;
  /**
   * Every session, most recently updated first. A session whose snapshot is missing or unreadable is listed
   * from its transcript (the source of truth).
   */
  list(): Promise<SessionSummary[]>;
  /** See {@link Session.reset}. */
  archive(key: string): Promise<string[]>;
  /** See {@link Session.delete}. */
  delete(key: string): Promise<boolean>;
  /** Releases what the store keeps open (for shutdown); the store still works afterwards. */
  close(): Promise<void>;
}

/**
 * The {@link Session} of `key` in `store`. Cheap (no I/O): a loaded session keeps its handle for life. Calls
 * go through `store` as given, so a wrapped store (e.g. one reporting a full disk) wraps the session too.
 */
export function openSession(store: SessionStore, key: string): Session {
  return {
    key,
    load: () => store.load(key),
    append: (messages, durability) => store.appendTranscript(key, messages, durability),
    checkpoint: async (snapshot, messages = []) => {
      if (snapshot.key !== key)
        throw new InternalError(
          "session.snapshot_invalid",
          `A snapshot of ${snapshot.key} given to session ${key}`,
        );
      return store.commit(snapshot, messages);
    },
    history: () => store.readTranscript(key),
    moveAside: (reason) => store.moveAside(key, reason),
    reset: () => store.archive(key),
    delete: () => store.delete(key),
  };
}
