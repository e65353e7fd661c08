import { InternalError, type Message, messageSchema } from "@almanac/core";
import { z } from "zod";

/** Counters kept with a session snapshot, shown by the admin API. */
export interface SessionStats {
  /** Completed turns (one user message answered). */
  readonly turns: number;
  /** Compactions committed. */
  readonly compactions: number;
  /** Milliseconds since the Unix epoch of the last message in or out. */
  readonly lastActivity: number;
  /** Channel the session came from, when known (also in the key; kept for quick listing). */
  readonly channel?: string;
  /** Messages in working memory at the last save (for listings without loading the memory). */
  readonly messageCount?: number;
  /** Prompt tokens of the working memory at the last save. */
  readonly contextTokens?: number;
  /**
   * What the session is about, for listings: see {@link sessionTitle}. Recorded by the first turn (or the next
   * turn of a session stored before titles were) and kept with the snapshot, so listings need no transcript.
   */
  readonly title?: string;
  /**
   * Written by earlier versions while a turn was in flight (the user's message persisted, the reply not yet).
   * Found on load, it tells the runtime the previous process died mid-turn and which input to reconcile.
   * Now the transcript's bytes past {@link SessionSnapshot.transcriptBytes} tell it; this is only read.
   */
  readonly openTurn?: OpenTurn;
}

/** A turn that was started but not finished when the snapshot was written. */
export interface OpenTurn {
  /** Id of the user message that started the turn. */
  readonly inputId: string;
  /** Milliseconds since the Unix epoch. */
  readonly startedAt: number;
}

/** Snapshot format version written by this code. */
export const SESSION_SNAPSHOT_VERSION = 1;

/**
 * What `sessions/<stem>.json` holds: the agent's working memory plus bookkeeping.
 * `memory` is opaque here; the agent validates it with its own schema when it restores the session.
 */
export interface SessionSnapshot {
  readonly version: typeof SESSION_SNAPSHOT_VERSION;
  /** Canonical session key (see `formatSessionKey`). */
  readonly key: string;
  /** Milliseconds since the Unix epoch. */
  readonly createdAt: number;
  /** Milliseconds since the Unix epoch. */
  readonly updatedAt: number;
  /** The agent's WorkingMemory as JSON; validated by the caller. */
  readonly memory: unknown;
  readonly stats: SessionStats;
  /**
   * Size of the transcript when this snapshot was written (set by the store). Transcript bytes beyond it are
   * messages the snapshot has not seen: a turn the process died in. Absent in snapshots of earlier versions.
   */
  readonly transcriptBytes?: number;
}

const timestampSchema = z.number().finite().nonnegative();
const countSchema = z.number().int().nonnegative();

/** Schema of {@link SessionStats}, for validating snapshot files. */
export const sessionStatsSchema: z.ZodType<SessionStats> = z.object({
  turns: countSchema,
  compactions: countSchema,
  lastActivity: timestampSchema,
  channel: z.string().optional(),
  messageCount: countSchema.optional(),
  contextTokens: countSchema.optional(),
  title: z.string().optional(),
  openTurn: z.object({ inputId: z.string().min(1), startedAt: timestampSchema }).optional(),
});

/** Schema of a snapshot file's envelope; unknown top-level fields are dropped. */
export const sessionSnapshotSchema: z.ZodType<SessionSnapshot> = z.object({
  version: z.literal(SESSION_SNAPSHOT_VERSION),
  key: z.string().min(1),
  createdAt: timestampSchema,
  updatedAt: timestampSchema,
  memory: z.unknown().refine((value) => value !== undefined, { message: "memory is required" }),
  stats: sessionStatsSchema,
  transcriptBytes: countSchema.optional(),
});

/** The longest {@link sessionTitle}, in characters (code points), its ellipsis included. */
export const SESSION_TITLE_MAX_CHARS = 60;

/**
 * A session's title: the first text of its first user message that has any (what the person wrote, not the
 * attachment note the server puts after it), whitespace collapsed, cut to {@link SESSION_TITLE_MAX_CHARS}
 * characters with an ellipsis; undefined while no user message has text.
 */
export function sessionTitle(messages: readonly Message[]): string | undefined {
  for (const message of messages) {
    if (message.role !== "user") continue;
    const text =
      message.content
        .map((block) => (block.type === "text" ? block.text.replace(/\s+/g, " ").trim() : ""))
        .find((blockText) => blockText !== "") ?? "";
    if (text === "") continue;
    // Counted and cut by code point, so an emoji or other astral character is never split in half.
    const characters = Array.from(text);
    if (characters.length <= SESSION_TITLE_MAX_CHARS) return text;
    return `${characters
      .slice(0, SESSION_TITLE_MAX_CHARS - 1)
      .join("")
      .trimEnd()}…`;
  }
  return undefined;
}

/** One line of `sessions/<stem>.jsonl`: the message, tagged with its session key. */
export interface TranscriptLine {
  readonly key: string;
  readonly message: Message;
}

/** Schema of one transcript line. */
export const transcriptLineSchema: z.ZodType<TranscriptLine> = z.object({
  key: z.string().min(1),
  message: messageSchema,
});

/** The first few problems zod found, as one line for an error or a log. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}

/**
 * Throws `session.message_invalid` for a message that could not be read back from a transcript. Every store
 * checks before appending, so a bad message fails the write that brought it, not a later load.
 */
export function checkMessages(key: string, messages: readonly Message[]): void {
  for (const message of messages) {
    const checked = messageSchema.safeParse(message);
    if (!checked.success) {
      throw new InternalError(
        "session.message_invalid",
        `Refusing to append an invalid message to session ${key}: ${describeIssues(checked.error)}`,
      );
    }
  }
}

/** The snapshot, validated; throws `session.snapshot_invalid` for one that must not be written. */
export function checkSnapshot(snapshot: SessionSnapshot): SessionSnapshot {
  const checked = sessionSnapshotSchema.safeParse(snapshot);
  if (!checked.success) {
    throw new InternalError(
      "session.snapshot_invalid",
      `Refusing to save an invalid snapshot for session ${snapshot.key}: ${describeIssues(checked.error)}`,
    );
  }
  return checked.data;
}
