import {
  type ContentBlock,
  createMessage,
  type InboundAttachment,
  type InboundMessage,
  type Message,
} from "@almanac/core";

/** The text a user message carries when the person sent nothing the model can read (e.g. a bare @mention). */
export const NO_TEXT_NOTE = "(The message had no text.)";

function formatBytes(bytes: number): string {
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

/**
 * The user message a turn starts with: the text, a note on attachments the model cannot see, and the images.
 * Never empty: a message with nothing readable gets {@link NO_TEXT_NOTE} (strict servers refuse an empty
 * message, and a refused message in the history would fail every later turn of the conversation).
 */
export function userMessageOf(inbound: InboundMessage): Message {
  const content: ContentBlock[] = [];
  if (inbound.text.trim() !== "") content.push({ type: "text", text: inbound.text });
  if (inbound.attachments !== undefined && inbound.attachments.length > 0)
    content.push({ type: "text", text: attachmentNote(inbound.attachments) });
  if (content.length === 0 && (inbound.images ?? []).length === 0)
    content.push({ type: "text", text: NO_TEXT_NOTE });
  content.push(...(inbound.images ?? []));
  return createMessage({ role: "user", timestamp: inbound.receivedAt, content });
}
