// Helpers that read untrusted JSON (API responses) without casting: wrong shapes become defaults.

/** A JSON object as a record, or an empty one for anything else. */
export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** A JSON array, or an empty one for anything else. */
export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A string field, or the fallback. */
export function str(value: unknown, fallback = ""): string {
  return typeof value === "string" ? value : fallback;
}

/** A finite number field, or undefined. */
export function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** A timestamp (milliseconds since the epoch) as local date and time, or a dash. */
export function formatTime(value: unknown): string {
  const ms = num(value);
  if (ms === undefined) return "—";
  return new Date(ms).toLocaleString();
}

/** A timestamp as an ISO string for a `<time datetime>`, or undefined. */
export function isoTime(value: unknown): string | undefined {
  const ms = num(value);
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/** A message's time as a chat shows it: the time of day today, with the date on other days. */
export function formatClock(value: unknown, now = Date.now()): string {
  const ms = num(value);
  if (ms === undefined) return "";
  const date = new Date(ms);
  const today = new Date(now);
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (date.toDateString() === today.toDateString()) return time;
  const sameYear = date.getFullYear() === today.getFullYear();
  const day = date.toLocaleDateString([], {
    month: "short",
    day: "numeric",
    ...(sameYear ? {} : { year: "numeric" }),
  });
  return `${day}, ${time}`;
}

/** How long ago a timestamp was, in words that fit a table cell. */
export function formatAgo(value: unknown, now = Date.now()): string {
  const ms = num(value);
  if (ms === undefined) return "—";
  const seconds = Math.max(0, Math.round((now - ms) / 1000));
  if (seconds < 10) return "just now";
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

/** The text blocks of a message's content, joined; other blocks are summarized in brackets. */
export function messageText(content: unknown): string {
  return asArray(content)
    .map((block) => {
      const record = asRecord(block);
      const type = str(record.type);
      if (type === "text") return str(record.text);
      if (type === "reasoning") return "";
      if (type === "tool_call") return `[tool call] ${str(record.name)}(${str(record.arguments)})`;
      if (type === "tool_result")
        return `[tool result${record.isError === true ? ", error" : ""}] ${str(record.content)}`;
      if (type === "image") return "[image]";
      return type === "" ? "" : `[${type}]`;
    })
    .filter((text) => text !== "")
    .join("\n");
}

/** The mark the server gives a reply that was stopped before it was complete. */
export const STOPPED_MARK = "stopped";

/**
 * A stopped reply's text without the `[stopped]` line the server ends it with (for the model's sake); the
 * console shows a badge instead.
 */
export function withoutStopMark(text: string): string {
  return text.replace(/\n*\[stopped\]\s*$/, "");
}

/** A stored message as the console shows it. */
export interface ShownMessage {
  readonly role: string;
  /** Its text (see {@link messageText}), a stopped reply's `[stopped]` line left out. */
  readonly text: string;
  /** Milliseconds since the epoch, when the message says. */
  readonly at: number | undefined;
  readonly marks: readonly string[];
  readonly stopped: boolean;
}

/** Reads one message of `GET /api/sessions/{key}` (untrusted JSON). */
export function readMessage(value: unknown): ShownMessage {
  const record = asRecord(value);
  const marks = asArray(record.marks).map((mark) => str(mark));
  const stopped = marks.includes(STOPPED_MARK);
  const text = messageText(record.content);
  return {
    role: str(record.role),
    text: stopped ? withoutStopMark(text) : text,
    at: num(record.timestamp),
    marks,
    stopped,
  };
}
