import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { type Logger, type Message, parseSessionKey, sessionKeyToFileStem } from "@almanac/core";
import { readTextIfExists } from "./file-helpers.js";
import type { SessionSummary } from "./session.js";
import { sessionTitle } from "./session-snapshot.js";
import { parseSnapshot } from "./snapshot-file.js";
import { transcriptFacts } from "./transcript-facts.js";

const LIST_BATCH_SIZE = 32;

/** What {@link listSessions} reads besides the directory: the store's own access to its transcripts. */
export interface SessionDirectory {
  /** The sessions directory, already created. */
  readonly dir: string;
  readonly logger: Logger;
  /** The session key of the first readable line of `<stem>.jsonl`; undefined when there is none. */
  transcriptKeyOf(stem: string): Promise<string | undefined>;
  /** The transcript of `key`, read as the store's `readTranscript` reads it. */
  readTranscript(key: string): AsyncIterable<Message>;
}

/**
 * Every session in the directory, most recently updated first (see `SessionStore.list`). A session whose
 * snapshot is missing or unreadable is listed from its transcript, the source of truth.
 */
export async function listSessions(directory: SessionDirectory): Promise<SessionSummary[]> {
  const entries = (await readdir(directory.dir)).filter((name) => !name.startsWith("."));
  const names = entries.filter((name) => name.endsWith(".json"));
  const summaries: SessionSummary[] = [];
  for (let start = 0; start < names.length; start += LIST_BATCH_SIZE) {
    const batch = names.slice(start, start + LIST_BATCH_SIZE);
    for (const summary of await Promise.all(batch.map((name) => readSummary(directory, name)))) {
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
    const summary = await summaryFromTranscript(directory, stem);
    if (summary !== undefined) summaries.push(summary);
  }
  return summaries.sort((a, b) => b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

async function readSummary(directory: SessionDirectory, name: string): Promise<SessionSummary | undefined> {
  const { logger } = directory;
  const stem = name.slice(0, -".json".length);
  const path = join(directory.dir, name);
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
async function summaryFromTranscript(
  directory: SessionDirectory,
  stem: string,
): Promise<SessionSummary | undefined> {
  const key = await directory.transcriptKeyOf(stem);
  if (key === undefined || safeStem(key) !== stem) return undefined;
  const messages: Message[] = [];
  for await (const message of directory.readTranscript(key)) messages.push(message);
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

function safeStem(key: string): string | undefined {
  try {
    return sessionKeyToFileStem(key);
  } catch {
    return undefined;
  }
}
