import { type OutboundMessage, parseSessionKey, splitMessage } from "@almanac/core";
import { discordUserError } from "./errors.js";
import { DISCORD_MESSAGE_LIMIT } from "./types.js";

/** Where a reply goes: a channel/thread/DM channel, or a user whose DM channel must be opened first. */
export type DiscordTarget =
  | { readonly kind: "channel"; readonly channelId: string; readonly replyToMessageId?: string }
  | { readonly kind: "user"; readonly userId: string };

/**
 * Decides where `message` goes. With `inReplyTo` from this adapter, the reply lands in the same
 * channel, thread or DM and references that message; otherwise the session key names the place.
 * @throws UserError `discord.target_invalid` for another channel's or account's session, or a kind Discord has not.
 */
export function resolveTarget(message: OutboundMessage, account: string): DiscordTarget {
  const origin = message.inReplyTo;
  if (origin !== undefined && origin.channel === "discord" && origin.account === account) {
    return { kind: "channel", channelId: origin.conversation.id, replyToMessageId: origin.id };
  }
  const parts = parseSessionKey(message.sessionKey);
  if (parts.channel !== "discord" || parts.account !== account) {
    throw discordUserError(
      "discord.target_invalid",
      `Session ${message.sessionKey} does not belong to the Discord adapter of account "${account}".`,
    );
  }
  if (parts.kind === "dm") return { kind: "user", userId: parts.id };
  if (parts.kind === "group") return { kind: "channel", channelId: parts.thread ?? parts.id };
  throw discordUserError(
    "discord.target_invalid",
    `Session ${message.sessionKey} has kind "${parts.kind}"; Discord sessions are "dm" or "group".`,
  );
}

/** Converts Markdown for Discord and splits it into messages of at most 2000 characters. */
export function toDiscordChunks(markdown: string): string[] {
  return splitMessage(toDiscordMarkdown(markdown), DISCORD_MESSAGE_LIMIT);
}

/**
 * Adapts Markdown to what Discord renders. Discord has headings `#`–`###`, lists, quotes, code and
 * masked links, so most text passes through; tables become aligned code blocks, `####`+ headings become
 * bold lines and images become links. Fenced code is never touched.
 */
export function toDiscordMarkdown(markdown: string): string {
  const lines = markdown.replace(/\r\n/g, "\n").split("\n");
  const out: string[] = [];
  let fence: string | undefined;
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] as string;
    if (fence !== undefined) {
      out.push(line);
      if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, "") === "") fence = undefined;
      continue;
    }
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (opening) {
      fence = opening[1];
      out.push(line);
      continue;
    }
    const table = readTable(lines, index);
    if (table !== undefined) {
      out.push("```", ...renderTable(table.rows), "```");
      index = table.end - 1;
      continue;
    }
    out.push(convertLine(line));
  }
  return out.join("\n");
}

function convertLine(line: string): string {
  const deepHeading = /^\s{0,3}#{4,6}\s+(.*?)\s*#*\s*$/.exec(line);
  if (deepHeading) return `**${deepHeading[1]}**`;
  return line.replace(/!\[([^\]]*)\]\(([^)\s]+)[^)]*\)/g, (_whole, alt: string, url: string) =>
    alt.trim() === "" ? url : `[${alt}](${url})`,
  );
}

const TABLE_SEPARATOR = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;

/** A GitHub-style table starting at `start` (header row + separator row + body rows), if there is one. */
function readTable(lines: readonly string[], start: number): { rows: string[][]; end: number } | undefined {
  const header = lines[start];
  const separator = lines[start + 1];
  if (header === undefined || separator === undefined) return undefined;
  if (!header.includes("|") || !TABLE_SEPARATOR.test(separator) || !separator.includes("|")) return undefined;
  const rows = [cells(header)];
  let end = start + 2;
  while (end < lines.length && (lines[end] as string).includes("|") && (lines[end] as string).trim() !== "") {
    rows.push(cells(lines[end] as string));
    end += 1;
  }
  return { rows, end };
}

function cells(row: string): string[] {
  const trimmed = row.trim().replace(/^\|/, "").replace(/\|$/, "");
  return trimmed.split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|"));
}

function renderTable(rows: readonly string[][]): string[] {
  const columns = Math.max(...rows.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_, column) =>
    Math.max(...rows.map((row) => (row[column] ?? "").length)),
  );
  const render = (row: readonly string[]) =>
    widths
      .map((width, column) => (row[column] ?? "").padEnd(width))
      .join(" | ")
      .trimEnd();
  const [header = [], ...body] = rows;
  return [
    render(header),
    widths.map((width) => "-".repeat(Math.max(width, 1))).join("-|-"),
    ...body.map(render),
  ];
}
