// Files in the chat: what a stored conversation says was sent (the person's attachments, the assistant's
// send_file), read from untrusted JSON, and how each one is shown.
import { asArray, asRecord, readMessage, str } from "./read.js";

/** How a file is shown: an image drawn, a recording played, anything else offered as a download. */
export type FileKind = "image" | "audio" | "file";

/**
 * A file shown in a chat bubble: one the server keeps (fetched with the token from `GET /api/files/content` by
 * its workspace path, never linked) or one this page holds (attached, not sent yet or just sent).
 */
export interface ChatFile {
  readonly name: string;
  readonly kind: FileKind;
  /** Workspace-relative path, `/`-separated. */
  readonly path?: string;
  /** The file itself, when the page has it. */
  readonly blob?: Blob;
  readonly caption?: string;
}

/** Types every browser draws in an `<img>` (HEIC and TIFF are offered as downloads). */
const DRAWN_IMAGES: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  bmp: "image/bmp",
};

/** Recordings browsers play (AMR, DingTalk's voice format, is offered as a download). */
const PLAYED_AUDIO: ReadonlySet<string> = new Set(["opus", "ogg", "oga", "mp3", "m4a", "wav", "aac", "flac"]);

/** How to show a file, by its type when known (the server's, read from the bytes), else by its extension. */
export function kindOf(name: string, contentType?: string): FileKind {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (type !== "") {
    if (Object.values(DRAWN_IMAGES).includes(type)) return "image";
    if (type.startsWith("audio/") && type !== "audio/amr") return "audio";
    if (type !== "application/octet-stream") return "file";
  }
  const extension = name.includes(".") ? (name.split(".").pop() ?? "").toLowerCase() : "";
  if (extension in DRAWN_IMAGES) return "image";
  return PLAYED_AUDIO.has(extension) ? "audio" : "file";
}

/** The last segment of a `/`-separated path. */
function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** The scheme of an image part naming a workspace file (the server's `almanac-file:` references). */
const WORKSPACE_FILE_SCHEME = "almanac-file:";

/** The first line of the server's note about a message's attachments. */
const NOTE_HEAD =
  /^\[The person sent (?:an attachment|\d+ attachments); files are saved in the workspace:\]$/;

/**
 * One saved attachment's line of that note: `- image "cat.png" (image/png, 51 KB), saved as inbox/…/cat.png`,
 * maybe followed by one of the server's remarks (`; shown below`, …: the server's tests check they are read).
 */
const SAVED_LINE =
  /^- .*? \(([^,()]+)[^()]*\), saved as (.+?)(?:; (?:shown below|you cannot see images, .*|its transcript is the text above|not transcribed \(.*\); the person was told))?$/;

/**
 * The files a user message's attachment note names as saved, and its other lines (files that were not saved, and
 * why): the note is the server's `[The person sent …; files are saved in the workspace:]` text block. Undefined
 * for any other text.
 */
export function filesOfNote(text: string): { files: ChatFile[]; rest: string[] } | undefined {
  const [head, ...lines] = text.split("\n");
  if (head === undefined || !NOTE_HEAD.test(head)) return undefined;
  const files: ChatFile[] = [];
  const rest: string[] = [];
  for (const line of lines) {
    const saved = SAVED_LINE.exec(line);
    const path = saved?.[2];
    if (saved === null || path === undefined) {
      rest.push(line.replace(/^- /, ""));
      continue;
    }
    files.push({ name: baseName(path), kind: kindOf(path, saved[1]), path });
  }
  return { files, rest };
}

/** A successful `send_file` result: `Sent <path> (<type>, <size>)…`. */
const SENT_RESULT = /^Sent (.+) \(([a-z0-9.+-]+\/[a-z0-9.+-]+), [^()]*\)[;. ]/;

/** The file a `send_file` call sent, from its result's text (the real path) and its arguments (the caption). */
export function sentFileOf(result: string, argumentsJson: string): ChatFile | undefined {
  const sent = SENT_RESULT.exec(result);
  const path = sent?.[1];
  if (sent === null || path === undefined) return undefined;
  let caption = "";
  try {
    caption = str(asRecord(JSON.parse(argumentsJson)).caption).trim();
  } catch {
    // Arguments that are not JSON carry no caption.
  }
  return {
    name: baseName(path),
    kind: kindOf(path, sent[2]),
    path,
    ...(caption === "" ? {} : { caption }),
  };
}

/** One message of the chat as the page shows it. */
export interface ChatLine {
  readonly role: string;
  readonly text: string;
  /** When it was said (ms since the epoch): from the history, or the moment this page saw it. */
  readonly at?: number;
  readonly streaming?: boolean;
  /** The reply was stopped before it was complete. */
  readonly stopped?: boolean;
  /** Files sent with the message, or by the assistant during its reply. */
  readonly files?: readonly ChatFile[];
  /**
   * Said by the schedule (a task or the heartbeat), not by the person: `text` is then the task's heading and the
   * page shows it as a note, not as the person's bubble.
   */
  readonly scheduled?: boolean;
}

/** The server's mark on the user message of a turn the schedule started. */
const SCHEDULED_MARK = "scheduled";

/** `Scheduled task T7K2M "Stretch", due …` from the first line of a scheduled turn's `[…]` heading. */
function scheduledHeading(text: string): string {
  const first = text.split("\n", 1)[0] ?? "";
  return first.replace(/^\[(.*)\]$/, "$1");
}

/** A user message's text without its attachment note, and the files it names (the note's and image parts). */
function userLine(record: Record<string, unknown>): ChatLine {
  const files: ChatFile[] = [];
  const texts: string[] = [];
  for (const block of asArray(record.content).map(asRecord)) {
    const type = str(block.type);
    if (type === "text") {
      const note = filesOfNote(str(block.text));
      if (note === undefined) texts.push(str(block.text));
      else {
        files.push(...note.files);
        if (note.rest.length > 0) texts.push(note.rest.join("\n"));
      }
    } else if (type === "image" && str(block.url).startsWith(WORKSPACE_FILE_SCHEME)) {
      const path = str(block.url).slice(WORKSPACE_FILE_SCHEME.length);
      if (!files.some((file) => file.path === path))
        files.push({ name: baseName(path), kind: "image", path });
    }
  }
  const shown = readMessage({ ...record, content: texts.map((text) => ({ type: "text", text })) });
  return {
    role: "user",
    text: shown.text,
    ...(shown.at === undefined ? {} : { at: shown.at }),
    ...(files.length === 0 ? {} : { files }),
  };
}

/**
 * A conversation's messages (`GET /api/sessions/{key}`, untrusted JSON) as the chat shows them: the person's and
 * the assistant's messages with text, the person's attachments as files, and the files the assistant sent with
 * `send_file` under the last reply of the turn they were sent in, as the live chat shows them (the calls
 * themselves are not shown).
 */
export function chatLinesOf(messages: readonly unknown[]): ChatLine[] {
  const results = new Map<string, string>();
  for (const message of messages.map(asRecord))
    for (const block of asArray(message.content).map(asRecord))
      if (str(block.type) === "tool_result" && block.isError !== true)
        results.set(str(block.callId), str(block.content));
  const lines: ChatLine[] = [];
  let turnStart = 0;
  let sent: ChatFile[] = [];
  const endTurn = () => {
    if (sent.length > 0) {
      const last = lines.length - 1;
      const line = lines[last];
      if (last >= turnStart && line?.role === "assistant")
        lines[last] = { ...line, files: [...(line.files ?? []), ...sent] };
      else lines.push({ role: "assistant", text: "", files: sent });
    }
    sent = [];
  };
  const isSend = (block: Record<string, unknown>) =>
    str(block.type) === "tool_call" && str(block.name) === "send_file";
  for (const record of messages.map(asRecord)) {
    const role = str(record.role);
    if (role === "user") {
      endTurn();
      if (asArray(record.marks).includes(SCHEDULED_MARK)) {
        const shown = readMessage(record);
        lines.push({
          role: "user",
          scheduled: true,
          text: scheduledHeading(shown.text),
          ...(shown.at === undefined ? {} : { at: shown.at }),
        });
        turnStart = lines.length;
        continue;
      }
      const line = userLine(record);
      if (line.text !== "" || line.files !== undefined) lines.push(line);
      turnStart = lines.length;
    } else if (role === "assistant") {
      const content = asArray(record.content).map(asRecord);
      for (const block of content.filter(isSend)) {
        const result = results.get(str(block.id));
        const file = result === undefined ? undefined : sentFileOf(result, str(block.arguments));
        if (file !== undefined) sent.push(file);
      }
      const shown = readMessage({ ...record, content: content.filter((block) => !isSend(block)) });
      if (shown.text === "" && !shown.stopped) continue;
      lines.push({
        role: "assistant",
        text: shown.text,
        ...(shown.at === undefined ? {} : { at: shown.at }),
        ...(shown.stopped ? { stopped: true } : {}),
      });
    }
  }
  endTurn();
  return lines;
}
