import { UserError } from "@almanac/core";

/** The header that names a session: a conversation name on requests, the session key on responses. */
export const SESSION_HEADER = "x-almanac-session";

/** Longest conversation name a client may give, in Unicode characters (code points), on every surface. */
export const MAX_SESSION_NAME_CHARS = 256;

// Strict: a lone "%" or a byte that is not UTF-8 is refused rather than guessed at, so one name has one spelling.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();
const HEX_PAIR = /^[0-9A-Fa-f]{2}$/;

/**
 * Checks a conversation name from a client (the `user` field, the header, a console conversation): any text of
 * 1 to {@link MAX_SESSION_NAME_CHARS} characters, used exactly as given (no trimming), so every script,
 * emoji and control character names its own session.
 * @throws UserError `request.invalid` naming `source` when the name is empty or too long.
 */
export function checkSessionName(name: string, source: string): string {
  if (name.length === 0) throw new UserError("request.invalid", `${source} must not be empty.`);
  const characters = [...name].length;
  if (characters > MAX_SESSION_NAME_CHARS) {
    throw new UserError(
      "request.invalid",
      `${source} is ${characters} characters long; at most ${MAX_SESSION_NAME_CHARS} are allowed.`,
    );
  }
  return name;
}

/**
 * Decodes an `X-Almanac-Session` request header to the conversation name.
 *
 * Clients send the name percent-encoded as UTF-8 (`encodeURIComponent`). Raw UTF-8 bytes in the header are
 * accepted too: Node hands header bytes over as Latin-1 characters, so they are turned back into bytes and
 * read as UTF-8 together with the escapes. A literal `%` must be sent as `%25`.
 * @throws UserError `request.invalid` when a `%` does not start a `%XX` escape or the bytes are not UTF-8.
 */
export function decodeSessionHeader(raw: string): string {
  const bytes: number[] = [];
  for (let index = 0; index < raw.length; index += 1) {
    const code = raw.charCodeAt(index);
    if (code === 0x25) {
      const pair = raw.slice(index + 1, index + 3);
      if (!HEX_PAIR.test(pair)) {
        throw new UserError(
          "request.invalid",
          `X-Almanac-Session must be percent-encoded UTF-8 (e.g. encodeURIComponent): the "%" at position ${index} does not start a %XX escape (send a literal "%" as %25).`,
        );
      }
      bytes.push(Number.parseInt(pair, 16));
      index += 2;
    } else if (code <= 0xff) {
      bytes.push(code);
    } else {
      // Not reachable from Node's parser (it gives Latin-1), but a caller with real text keeps its meaning.
      bytes.push(...utf8Encoder.encode(raw[index]));
    }
  }
  try {
    return utf8.decode(Uint8Array.from(bytes));
  } catch {
    throw new UserError(
      "request.invalid",
      "X-Almanac-Session is not valid UTF-8: send the name percent-encoded as UTF-8 (e.g. encodeURIComponent).",
    );
  }
}

/**
 * Encodes a session key for the `X-Almanac-Session` response header: percent-encoded UTF-8 (RFC 3986), where
 * the unreserved characters `A-Z a-z 0-9 - . _ ~` and `:` stay as they are. The result is printable ASCII, valid
 * in any header, and `decodeURIComponent` gives the key back; keys of ASCII letters and digits read unchanged.
 */
export function encodeSessionHeader(key: string): string {
  let encoded = "";
  for (const byte of utf8Encoder.encode(key)) {
    const isPlain =
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      (byte >= 0x30 && byte <= 0x39) ||
      byte === 0x2d ||
      byte === 0x2e ||
      byte === 0x5f ||
      byte === 0x7e ||
      byte === 0x3a;
    encoded += isPlain ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}
