import { createHash } from "node:crypto";
import { UserError } from "./errors.js";

/**
 * What kind of conversation a session is. The known kinds are listed for editors;
 * any lowercase ASCII word is accepted so a new channel does not need a core change.
 */
export type SessionKind = "dm" | "group" | "thread" | "api" | "web" | (string & {});

/** The parts of a canonical session key `{channel}:{account}:{kind}:{id}[:{thread}]`, decoded. */
export interface SessionKeyParts {
  /** Channel adapter name, e.g. `discord`, `feishu`, `web`. */
  readonly channel: string;
  /** Bot account or workspace within the channel (one adapter may serve several). */
  readonly account: string;
  /** Conversation kind; must match `[a-z]+`. */
  readonly kind: SessionKind;
  /** Conversation id on the platform (user id for `dm`, chat id for `group`, ...). */
  readonly id: string;
  /** Thread within the conversation, when the platform has threads. */
  readonly thread?: string;
}

/** Longest stem {@link sessionKeyToFileStem} returns without hashing, in bytes (all stem characters are ASCII). */
export const MAX_PLAIN_STEM_LENGTH = 180;
/** How many leading characters of the encoded key a hashed stem keeps, so files stay recognisable. */
export const HASHED_STEM_PREFIX_LENGTH = 120;

const KIND_PATTERN = /^[a-z]+$/;
// A lone UTF-16 surrogate has no UTF-8 form: TextEncoder turns every one into U+FFFD, which would make
// two different keys share a stem. With the `u` flag, paired surrogates form one code point and do not match.
const LONE_SURROGATE = /\p{Cs}/u;
const ENCODED_PART = /^(?:[^%]|%25|%3A)*$/;
const utf8 = new TextEncoder();

/**
 * Formats parts as a canonical session key. Inside a part, `%` becomes `%25` and `:` becomes `%3A`,
 * so {@link parseSessionKey} gives back exactly the same parts.
 * @throws UserError `session.key_invalid` when a part is empty, the kind is not `[a-z]+`,
 * or a part is not well-formed Unicode.
 */
export function formatSessionKey(parts: SessionKeyParts): string {
  const fields: [string, string][] = [
    ["channel", parts.channel],
    ["account", parts.account],
    ["kind", parts.kind],
    ["id", parts.id],
  ];
  if (parts.thread !== undefined) fields.push(["thread", parts.thread]);
  for (const [name, value] of fields) checkPart(name, value, JSON.stringify(parts));
  return fields.map(([, value]) => encodePart(value)).join(":");
}

/**
 * Parses a canonical session key. Exact: `formatSessionKey(parseSessionKey(text)) === text` for every
 * accepted text, so one session has one key text (only `%25` and `%3A` escapes, in upper case, are valid).
 * @throws UserError `session.key_invalid` naming what is wrong.
 */
export function parseSessionKey(text: string): SessionKeyParts {
  const pieces = text.split(":");
  if (pieces.length !== 4 && pieces.length !== 5) {
    throw invalidKey(
      text,
      `expected 4 or 5 parts separated by ":" ({channel}:{account}:{kind}:{id}[:{thread}]), found ${pieces.length}`,
    );
  }
  const names = ["channel", "account", "kind", "id", "thread"] as const;
  const decoded: string[] = [];
  pieces.forEach((piece, index) => {
    const name = names[index] ?? "thread";
    if (!ENCODED_PART.test(piece)) {
      throw invalidKey(text, `the ${name} part has a "%" that is not "%25" or "%3A"`);
    }
    const value = decodePart(piece);
    checkPart(name, value, text);
    decoded.push(value);
  });
  const [channel = "", account = "", kind = "", id = "", thread] = decoded;
  return thread === undefined ? { channel, account, kind, id } : { channel, account, kind, id, thread };
}

/** True when `text` is a canonical session key (see {@link parseSessionKey}). */
export function isSessionKey(text: string): boolean {
  try {
    parseSessionKey(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stems already made, by key: every transcript append and checkpoint asks for one, and parsing and encoding
 * the key each time was 0.7 % of the server main thread with 100 sessions talking at once. Bounded: cleared
 * when full.
 */
const stems = new Map<string, string>();
const MAX_KNOWN_STEMS = 4_096;

/**
 * Maps a session key to a file-name stem that is safe on every common file system and injective,
 * even where file names are compared case-insensitively.
 *
 * Encoding: each UTF-8 byte outside `[a-z0-9_-]` and `.` becomes `%XX` (upper-case hex), so upper-case
 * letters, `%`, `:` and `~` are always escaped, and a leading `.` is escaped too (no hidden files; the store
 * relies on this to keep its dot-prefixed temp files apart from snapshots). Decoding is unambiguous (`%` always
 * starts a three-character escape), so the plain encoding is injective; folding case only changes the hex
 * digits' case and letters that are already lower case, so the folded stem still decodes to the same key.
 *
 * Stems longer than {@link MAX_PLAIN_STEM_LENGTH} bytes become the first {@link HASHED_STEM_PREFIX_LENGTH}
 * characters + `~` + sha256 hex of the whole key. `~` never occurs in a plain stem, so a hashed stem never
 * equals a plain one; two hashed stems are equal only if their full keys have the same sha256 (the prefix
 * does not matter), and the lower-case hex is unchanged by case folding.
 * @throws UserError `session.key_invalid` when `key` is not a canonical session key.
 */
export function sessionKeyToFileStem(key: string): string {
  const known = stems.get(key);
  if (known !== undefined) return known;
  parseSessionKey(key);
  let stem = "";
  for (const byte of utf8.encode(key)) stem += encodeStemByte(byte, stem.length === 0);
  if (stem.length > MAX_PLAIN_STEM_LENGTH) {
    const digest = createHash("sha256").update(key, "utf8").digest("hex");
    stem = `${stem.slice(0, HASHED_STEM_PREFIX_LENGTH)}~${digest}`;
  }
  if (stems.size >= MAX_KNOWN_STEMS) stems.clear();
  stems.set(key, stem);
  return stem;
}

function encodeStemByte(byte: number, isFirst: boolean): string {
  const isLower = byte >= 0x61 && byte <= 0x7a;
  const isDigit = byte >= 0x30 && byte <= 0x39;
  const isSafeMark = byte === 0x5f || byte === 0x2d || (byte === 0x2e && !isFirst);
  if (isLower || isDigit || isSafeMark) return String.fromCharCode(byte);
  return `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
}

function encodePart(value: string): string {
  return value.replaceAll("%", "%25").replaceAll(":", "%3A");
}

function decodePart(piece: string): string {
  return piece.replace(/%25|%3A/g, (sequence) => (sequence === "%25" ? "%" : ":"));
}

function checkPart(name: string, value: string, shown: string): void {
  if (value.length === 0) throw invalidKey(shown, `the ${name} part is empty`);
  if (name === "kind" && !KIND_PATTERN.test(value)) {
    throw invalidKey(shown, `the kind "${value}" must be lowercase letters a-z (e.g. dm, group, thread)`);
  }
  if (LONE_SURROGATE.test(value)) throw invalidKey(shown, `the ${name} part is not well-formed Unicode`);
}

function invalidKey(shown: string, reason: string): UserError {
  const preview = shown.length > 200 ? `${shown.slice(0, 200)}…` : shown;
  return new UserError("session.key_invalid", `Invalid session key ${JSON.stringify(preview)}: ${reason}.`);
}
