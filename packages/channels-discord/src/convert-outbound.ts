import { createHash } from "node:crypto";
import { type MessageButton, type OutboundMessage, parseSessionKey, splitMessage } from "@almanac/core";
import {
  type APIActionRowComponent,
  type APIButtonComponentWithCustomId,
  ButtonStyle,
  ComponentType,
} from "discord.js";
import { BUTTON_CUSTOM_ID_PREFIX, isButtonPressPayload } from "./discord-interaction-schema.js";
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
    // A button press is not a message: the answer replies to the message the button was on.
    const replyToMessageId = isButtonPressPayload(origin.raw) ? origin.replyTo : origin.id;
    return {
      kind: "channel",
      channelId: origin.conversation.id,
      ...(replyToMessageId === undefined ? {} : { replyToMessageId }),
    };
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

/** Discord's limit on a message `nonce`, in characters. */
const NONCE_LENGTH = 25;

/**
 * The fields that make Discord post part `index` of a message at most once: a `nonce` derived from the message's
 * idempotency key, with `enforce_nonce`. Discord then answers a repeat from the same bot within a few minutes with
 * the message it already created. The key (a firing id, ~20–40 characters) plus the index would not fit Discord's
 * 25 characters, so the nonce is their SHA-256 in hex, cut to 25 (100 bits); nothing reads it back.
 */
export function toDiscordNonce(
  idempotencyKey: string,
  index: number,
): { readonly nonce: string; readonly enforce_nonce: true } {
  const digest = createHash("sha256").update(`${idempotencyKey}\n${index}`).digest("hex");
  return { nonce: digest.slice(0, NONCE_LENGTH), enforce_nonce: true };
}

/** Discord's limits on message components (API v10). */
const BUTTON_LIMITS = { customId: 100, label: 80, perRow: 5, rows: 5 } as const;

const BUTTON_STYLES: Readonly<
  Record<NonNullable<MessageButton["style"]>, APIButtonComponentWithCustomId["style"]>
> = {
  primary: ButtonStyle.Primary,
  secondary: ButtonStyle.Secondary,
  danger: ButtonStyle.Danger,
};

/** Action rows of buttons for a message, and the buttons that could not be shown (and why). */
export interface DiscordButtonRows {
  readonly rows: APIActionRowComponent<APIButtonComponentWithCustomId>[];
  readonly dropped: readonly { readonly label: string; readonly reason: string }[];
}

/**
 * Turns buttons into action rows of Discord buttons, five to a row. Each button's `custom_id` is
 * {@link BUTTON_CUSTOM_ID_PREFIX} + its reply, so a press carries the reply back without the adapter remembering
 * anything. A button Discord would refuse (reply empty or too long for the 100-character `custom_id`, the same
 * reply twice, more than 25 buttons) is left out rather than failing the message: the text says what to type.
 */
export function toDiscordButtonRows(buttons: readonly MessageButton[]): DiscordButtonRows {
  const dropped: { label: string; reason: string }[] = [];
  const kept: APIButtonComponentWithCustomId[] = [];
  const seen = new Set<string>();
  const maxButtons = BUTTON_LIMITS.perRow * BUTTON_LIMITS.rows;
  for (const button of buttons) {
    const customId = `${BUTTON_CUSTOM_ID_PREFIX}${button.reply}`;
    const reason =
      button.reply.trim() === ""
        ? "its reply is empty"
        : customId.length > BUTTON_LIMITS.customId
          ? `its reply is longer than ${BUTTON_LIMITS.customId - BUTTON_CUSTOM_ID_PREFIX.length} characters`
          : seen.has(customId)
            ? "another button has the same reply"
            : kept.length >= maxButtons
              ? `a message holds at most ${maxButtons} buttons`
              : undefined;
    if (reason !== undefined) {
      dropped.push({ label: button.label, reason });
      continue;
    }
    seen.add(customId);
    const label = truncate(button.label.trim() === "" ? button.reply : button.label, BUTTON_LIMITS.label);
    kept.push({
      type: ComponentType.Button,
      style: BUTTON_STYLES[button.style ?? "secondary"],
      label,
      custom_id: customId,
    });
  }
  const rows: DiscordButtonRows["rows"] = [];
  for (let start = 0; start < kept.length; start += BUTTON_LIMITS.perRow) {
    rows.push({ type: ComponentType.ActionRow, components: kept.slice(start, start + BUTTON_LIMITS.perRow) });
  }
  return { rows, dropped };
}

/** At most `max` UTF-16 units (never more characters than Discord counts), without splitting a surrogate pair. */
function truncate(text: string, max: number): string {
  let out = "";
  for (const character of text) {
    if (out.length + character.length > max) break;
    out += character;
  }
  return out;
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
