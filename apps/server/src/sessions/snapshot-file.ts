import { InternalError } from "@almanac/core";
import { describeIssues, type SessionSnapshot, sessionSnapshotSchema } from "./session-snapshot.js";

/** Returns the snapshot in a `<stem>.json` file's text, or a reason why the text is not one. */
export function parseSnapshot(text: string): SessionSnapshot | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return `invalid JSON (${error instanceof Error ? error.message : String(error)})`;
  }
  const checked = sessionSnapshotSchema.safeParse(json);
  return checked.success ? checked.data : `not a session snapshot (${describeIssues(checked.error)})`;
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

/** The text of a snapshot file; throws `session.snapshot_invalid` when the snapshot is not JSON-serializable. */
export function serializeSnapshot(snapshot: SessionSnapshot): string {
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
