import {
  type ContentBlock,
  createMessage,
  type InboundAttachment,
  type InboundMessage,
  type Message,
  workspaceFileUrl,
} from "@almanac/core";
import type {
  ReceivedAttachment,
  RefusedAttachment,
  SavedAttachment,
} from "../attachments/received-attachment.js";

/** The text a user message carries when the person sent nothing the model can read (e.g. a bare @mention). */
export const NO_TEXT_NOTE = "(The message had no text.)";

/** A file size as the model and people read it: `512 B`, `51 KB`, `2.5 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value >= 10 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

function formatDuration(milliseconds: number): string {
  const seconds = Math.max(1, Math.round(milliseconds / 1000));
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** One attachment in words: what it is, its name, type, size and length, and its link when there is one. */
function describeAttachment(attachment: InboundAttachment): string {
  const what = attachment.voice === true ? "voice message" : attachment.kind;
  const facts = [
    attachment.contentType,
    attachment.size === undefined ? undefined : formatBytes(attachment.size),
    attachment.durationMs === undefined ? undefined : formatDuration(attachment.durationMs),
  ].filter((fact) => fact !== undefined);
  return [
    `- ${what}`,
    attachment.name === undefined ? "" : ` "${attachment.name}"`,
    facts.length === 0 ? "" : ` (${facts.join(", ")})`,
    attachment.url === undefined ? "" : `, link: ${attachment.url}`,
  ].join("");
}

/**
 * What the model is told about attachments it cannot see: each one's kind, name, type, size and length, and
 * that it was not downloaded, so it can answer the person instead of getting an empty message.
 */
export function attachmentNote(attachments: readonly InboundAttachment[]): string {
  const count = attachments.length === 1 ? "an attachment" : `${attachments.length} attachments`;
  return [
    `[The person sent ${count}. Almanac did not download ${attachments.length === 1 ? "it" : "them"}, so you cannot see the content; say so if you need it, and ask for it as text.]`,
    ...attachments.map(describeAttachment),
  ].join("\n");
}

function savedLine(item: SavedAttachment): string {
  const facts = [
    item.type.mime,
    formatBytes(item.size),
    item.durationMs === undefined ? undefined : formatDuration(item.durationMs),
  ].filter((fact) => fact !== undefined);
  const head = `- ${item.kind}${item.originalName === undefined ? "" : ` "${item.originalName}"`} (${facts.join(", ")}), saved as ${item.path}`;
  if (item.transcript !== undefined)
    return "text" in item.transcript
      ? `${head}; its transcript is the text above`
      : `${head}; not transcribed (${item.transcript.problem}); the person was told`;
  if (item.shown) return `${head}; shown below`;
  if (item.type.category === "image")
    return `${head}; you cannot see images, so ask for a description if you need one`;
  return head;
}

/**
 * What the model is told about attachments that were taken or refused before the turn: each one's kind, name, type,
 * size and the workspace path it was saved as, or why it was not; refusals were told to the person already.
 */
export function receivedNote(received: readonly (SavedAttachment | RefusedAttachment)[]): string {
  const count = received.length === 1 ? "an attachment" : `${received.length} attachments`;
  return [
    `[The person sent ${count}; files are saved in the workspace:]`,
    ...received.map((item) =>
      item.status === "saved"
        ? savedLine(item)
        : `- ${item.kind}${item.originalName === undefined ? "" : ` "${item.originalName}"`}: not saved, ${item.problem}; the person was told`,
    ),
  ].join("\n");
}

/** The mark on the user message of a turn the schedule started (a task or the heartbeat), not a person. */
export const SCHEDULED_MARK = "scheduled";

/**
 * The user message a turn starts with: the text, then (for attachments taken before the turn, `received`) a voice
 * message's transcript, a note naming each file's saved path or why it was not saved, and the images the model is
 * shown, as references to their files (`almanac-file:…`, never bytes). Without `received` (a turn nobody
 * attached anything to, or a channel's message taken as it came) the inbound's images are image parts and its
 * attachments are described as not downloaded.
 * Never empty: a message with nothing readable gets {@link NO_TEXT_NOTE} (strict servers refuse an empty
 * message, and a refused message in the history would fail every later turn of the conversation).
 */
export function userMessageOf(inbound: InboundMessage, received?: readonly ReceivedAttachment[]): Message {
  const content: ContentBlock[] = [];
  if (inbound.text.trim() !== "") content.push({ type: "text", text: inbound.text });
  if (received === undefined) {
    if (inbound.attachments !== undefined && inbound.attachments.length > 0)
      content.push({ type: "text", text: attachmentNote(inbound.attachments) });
    if (content.length === 0 && (inbound.images ?? []).length === 0)
      content.push({ type: "text", text: NO_TEXT_NOTE });
    content.push(...(inbound.images ?? []));
    return createMessage({ role: "user", timestamp: inbound.receivedAt, content });
  }
  const taken = received.filter((item) => item.status !== "not-downloaded");
  for (const item of taken)
    if (item.status === "saved" && item.transcript !== undefined && "text" in item.transcript)
      content.push({ type: "text", text: item.transcript.text });
  if (taken.length > 0) content.push({ type: "text", text: receivedNote(taken) });
  const unfetched = received.flatMap((item) => (item.status === "not-downloaded" ? [item.attachment] : []));
  if (unfetched.length > 0) content.push({ type: "text", text: attachmentNote(unfetched) });
  if (content.length === 0) content.push({ type: "text", text: NO_TEXT_NOTE });
  for (const item of taken)
    if (item.status === "saved" && item.shown)
      content.push({ type: "image", url: workspaceFileUrl(item.path) });
  return createMessage({ role: "user", timestamp: inbound.receivedAt, content });
}
