import { type Message, parseSessionKey, sessionKeyToFileStem } from "@almanac/core";
import type { MissingOrMovedAside, SessionStore, SessionSummary } from "../../src/sessions/session.js";
import {
  checkMessages,
  checkSnapshot,
  type SessionSnapshot,
  transcriptLineSchema,
} from "../../src/sessions/session-snapshot.js";
import { parseSnapshot, serializeSnapshot } from "../../src/sessions/snapshot-file.js";
import { transcriptFacts } from "../../src/sessions/transcript-facts.js";

/** One session's records in a {@link MemorySessionState}: JSON text, as the files would hold it. */
interface StoredSession {
  /** The snapshot's JSON; its `transcriptBytes` counts transcript lines here, not bytes. */
  snapshot?: string;
  /** One JSON line per message, each tagged with its key like a transcript file's. */
  transcript: string[];
}

/** What a memory store keeps; share one between stores to model a restart of the process. */
export interface MemorySessionState {
  readonly sessions: Map<string, StoredSession>;
  /** Archived and moved-aside copies, by a name like the file store's. */
  readonly aside: Map<string, StoredSession | string>;
}

/** Empty state for {@link createMemorySessionStore}. */
export function createMemorySessionState(): MemorySessionState {
  return { sessions: new Map(), aside: new Map() };
}

/**
 * A {@link SessionStore} in memory, for tests: the same contract as the file store (records kept as JSON, so
 * nothing the caller mutates later leaks in; invalid messages and snapshots refused with the same codes),
 * without a directory. Passes `session-store-contract.ts`.
 */
export function createMemorySessionStore(state = createMemorySessionState()): SessionStore {
  const { sessions, aside } = state;
  let sequence = 0;
  const entry = (key: string): StoredSession => {
    sessionKeyToFileStem(key); // the same keys the file store accepts
    let stored = sessions.get(key);
    if (stored === undefined) {
      stored = { transcript: [] };
      sessions.set(key, stored);
    }
    return stored;
  };
  const forget = (key: string): void => {
    const stored = sessions.get(key);
    if (stored !== undefined && stored.snapshot === undefined && stored.transcript.length === 0)
      sessions.delete(key);
  };
  const putAside = (name: string, value: StoredSession | string): string => {
    sequence += 1;
    const movedTo = `${name}-${sequence}`;
    aside.set(movedTo, value);
    return movedTo;
  };
  const linesOf = (key: string, messages: readonly Message[]): string[] => {
    checkMessages(key, messages);
    return messages.map((message) => JSON.stringify({ key, message }));
  };
  const messagesOf = (lines: readonly string[]): Message[] =>
    lines.map((line) => transcriptLineSchema.parse(JSON.parse(line)).message);

  async function commit(snapshot: SessionSnapshot, messages: readonly Message[]): Promise<void> {
    const checked = checkSnapshot(snapshot);
    const lines = linesOf(snapshot.key, messages);
    const stored = entry(snapshot.key);
    const text = serializeSnapshot({ ...checked, transcriptBytes: stored.transcript.length + lines.length });
    stored.transcript.push(...lines);
    stored.snapshot = text;
  }

  function summaryOf(key: string, stored: StoredSession): SessionSummary | undefined {
    const stem = sessionKeyToFileStem(key);
    const parsed = stored.snapshot === undefined ? undefined : parseSnapshot(stored.snapshot);
    if (parsed !== undefined && typeof parsed !== "string") {
      const { createdAt, updatedAt, stats } = parsed;
      return { key, stem, createdAt, updatedAt, stats };
    }
    const facts = transcriptFacts(messagesOf(stored.transcript));
    if (facts === undefined) return undefined;
    const { createdAt, lastActivity, turns, messageCount } = facts;
    const channel = parseSessionKey(key).channel;
    const stats = { turns, compactions: 0, lastActivity, channel, messageCount };
    return { key, stem, createdAt, updatedAt: lastActivity, stats };
  }

  function moveAside(key: string, reason: string): MissingOrMovedAside {
    sessionKeyToFileStem(key);
    const stored = sessions.get(key);
    if (stored?.snapshot === undefined) return { status: "missing" };
    const movedTo = putAside(`${sessionKeyToFileStem(key)}.json.corrupt`, stored.snapshot);
    stored.snapshot = undefined;
    forget(key);
    return { status: "corrupt", reason, movedTo };
  }

  return {
    save: (snapshot) => commit(snapshot, []),
    commit,

    async load(key) {
      sessionKeyToFileStem(key);
      const stored = sessions.get(key);
      if (stored?.snapshot === undefined) return { status: "missing" };
      const parsed = parseSnapshot(stored.snapshot);
      if (typeof parsed === "string") return moveAside(key, parsed);
      const recorded = parsed.transcriptBytes ?? stored.transcript.length;
      return {
        status: "ok",
        snapshot: parsed,
        unseen: messagesOf(stored.transcript.slice(recorded)),
        transcriptBehind: stored.transcript.length < recorded,
      };
    },

    moveAside: async (key, reason) => moveAside(key, reason),

    // Durability is the file store's concern: the fake keeps everything either way.
    async appendTranscript(key, messages) {
      const lines = linesOf(key, messages);
      if (lines.length > 0) entry(key).transcript.push(...lines);
    },

    async *readTranscript(key) {
      sessionKeyToFileStem(key);
      // As it was when reading began, like the file store.
      const lines = [...(sessions.get(key)?.transcript ?? [])];
      for (const line of lines) yield messagesOf([line])[0] as Message;
    },

    async list() {
      const summaries: SessionSummary[] = [];
      for (const [key, stored] of sessions) {
        const summary = summaryOf(key, stored);
        if (summary !== undefined) summaries.push(summary);
      }
      return summaries.sort(
        (a, b) => b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
      );
    },

    async archive(key) {
      sessionKeyToFileStem(key);
      const stored = sessions.get(key);
      if (stored === undefined) return [];
      sessions.delete(key);
      return [putAside(`archive/${sessionKeyToFileStem(key)}`, stored)];
    },

    async delete(key) {
      sessionKeyToFileStem(key);
      return sessions.delete(key);
    },

    async close() {},
  };
}
