import { imageAsText, type Message } from "@almanac/core";
import { localTimeOf } from "@almanac/memory-files";

/** Limits of {@link renderTranscript}, in characters. */
export interface TranscriptLimits {
  /** Longest text of one user or assistant message; longer text keeps its head and tail. Default 6000. */
  readonly maxTextChars?: number;
  /** Longest tool result shown. Default 300. */
  readonly maxToolResultChars?: number;
  /** Longest rendering of one tool call's arguments. Default 200. */
  readonly maxToolArgumentChars?: number;
}

/** Keeps the head and tail of a long text and says how much was cut in between. */
export function trimMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const marker = ` […${text.length - maxChars} characters cut…] `;
  const keep = Math.max(0, maxChars - marker.length);
  const head = Math.ceil(keep * 0.7);
  return `${text.slice(0, head)}${marker}${text.slice(text.length - (keep - head))}`;
}

/** Keeps the start of a text and says how much more there was. */
function trimEnd(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}… [${text.length - maxChars} more characters]`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Tool-call arguments (untrusted model JSON) as `key: value` pairs, each value cut short. */
function renderArguments(raw: string, maxChars: number): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return trimEnd(oneLine(raw), maxChars);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    return trimEnd(oneLine(raw), maxChars);
  }
  const pairs = Object.entries(parsed).map(([key, value]) => {
    const shown =
      typeof value === "string"
        ? JSON.stringify(trimEnd(value, 80))
        : trimEnd(JSON.stringify(value) ?? "null", 80);
    return `${key}: ${shown}`;
  });
  return trimEnd(pairs.join(", "), maxChars);
}

/**
 * Renders messages compactly for the summarizer, one entry per message: local time, role, text;
 * tool calls as names with short arguments; tool results cut short (they are rarely worth keeping
 * verbatim and can be huge). System messages and reasoning are left out.
 */
export function renderTranscript(
  messages: readonly Message[],
  timeZone: string,
  limits: TranscriptLimits = {},
): string[] {
  const maxTextChars = limits.maxTextChars ?? 6000;
  const maxToolResultChars = limits.maxToolResultChars ?? 300;
  const maxToolArgumentChars = limits.maxToolArgumentChars ?? 200;
  const toolNames = new Map<string, string>();
  const entries: string[] = [];
  for (const message of messages) {
    if (message.role === "system") continue;
    const time = localTimeOf(message.timestamp, timeZone);
    const speaker =
      message.role === "user" && message.name !== undefined ? `user (${message.name})` : message.role;
    const lines: string[] = [];
    const texts: string[] = [];
    for (const block of message.content) {
      switch (block.type) {
        case "text":
          if (block.text.trim() !== "") texts.push(block.text.trim());
          break;
        case "image":
          texts.push(imageAsText(block));
          break;
        case "tool_call":
          toolNames.set(block.id, block.name);
          lines.push(
            `[${time}] ${speaker} called ${block.name}(${renderArguments(block.arguments, maxToolArgumentChars)})`,
          );
          break;
        case "tool_result": {
          const name = toolNames.get(block.callId) ?? "tool";
          const label = block.isError === true ? "error" : "result";
          lines.push(`[${time}] ${name} ${label}: ${trimEnd(oneLine(block.content), maxToolResultChars)}`);
          break;
        }
        case "reasoning":
          break;
      }
    }
    if (texts.length > 0)
      lines.unshift(`[${time}] ${speaker}: ${trimMiddle(texts.join("\n"), maxTextChars)}`);
    if (lines.length > 0) entries.push(lines.join("\n"));
  }
  return entries;
}
