/** A `data:` URL's bytes and the MIME type it states. */
export interface DataUrlContent {
  readonly bytes: Uint8Array;
  /** As the URL states it (the server checks the content itself). */
  readonly contentType: string | undefined;
}

const DATA_URL = /^data:([^,;]*)((?:;[^,;=]+=[^,;]*)*)(;base64)?,/i;

/**
 * Base64 text as bytes, or undefined when it is not base64: Node's decoder skips what is not in the alphabet, so
 * a decoded length other than the text's says so (checked without a regular expression over megabytes of text).
 */
function decodeBase64(text: string): Uint8Array | undefined {
  let padding = 0;
  while (padding < 2 && text.charCodeAt(text.length - 1 - padding) === 61 /* = */) padding += 1;
  const bytes = Buffer.from(text, "base64");
  return bytes.length === Math.floor(((text.length - padding) * 3) / 4) ? bytes : undefined;
}

/**
 * Parses a `data:` URL (RFC 2397) as API clients send images: base64 or percent-encoded content. Undefined for
 * anything else, or base64 that is not base64.
 */
export function parseDataUrl(url: string): DataUrlContent | undefined {
  const head = DATA_URL.exec(url);
  if (head === null) return undefined;
  const payload = url.slice(head[0].length);
  const contentType = head[1]?.trim().toLowerCase() || undefined;
  if (head[3] !== undefined) {
    const bytes = decodeBase64(payload);
    return bytes === undefined ? undefined : { bytes, contentType };
  }
  try {
    return { bytes: new TextEncoder().encode(decodeURIComponent(payload)), contentType };
  } catch {
    return undefined;
  }
}

import { UserError } from "@almanac/core";

/**
 * The largest request body that can carry a file of `maxBytes` as a base64 `data:` URL (4 characters per 3 bytes),
 * with room for the rest of the request; never below the server's own `bodyLimit`.
 */
export function bodyLimitForFiles(maxBytes: number, bodyLimit: number): number {
  return Math.max(bodyLimit, Math.ceil((maxBytes * 4) / 3) + 1_048_576);
}

/**
 * Keeps `ALMANAC_BODY_LIMIT_BYTES` for everything in a request but its files: the route's own body limit is raised
 * for `data:` URLs (see {@link bodyLimitForFiles}), so the rest is checked here, from the body's `Content-Length`
 * less the characters of its `data:` URLs (a body sent without a length was held to the raised limit only).
 * Throws `request.too_large` (413).
 */
export function checkBodyBesideFiles(
  contentLength: string | undefined,
  fileChars: number,
  bodyLimit: number,
): void {
  const total = contentLength === undefined ? Number.NaN : Number(contentLength);
  if (!Number.isFinite(total) || total - fileChars <= bodyLimit) return;
  throw new UserError(
    "request.too_large",
    `Request body is larger than the server accepts (${bodyLimit} bytes besides attached files, ALMANAC_BODY_LIMIT_BYTES).`,
  );
}

/** Characters of the `data:` URLs in image parts of chat messages (any message: clients resend earlier images). */
export function dataUrlChars(messages: readonly unknown[]): number {
  let chars = 0;
  for (const message of messages) {
    const content = (message as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) continue;
    for (const part of content) {
      const url = (part as { image_url?: { url?: unknown } } | null)?.image_url?.url;
      if (typeof url === "string" && url.startsWith("data:")) chars += url.length;
    }
  }
  return chars;
}
