import { UserError } from "@almanac/core";
import type { AttachmentIntake, InlineFile } from "./attachment-intake.js";
import { parseDataUrl } from "./data-url.js";
import type { ReceivedAttachment } from "./received-attachment.js";

/** A file an HTTP client sent with its message, by URL. */
export interface RequestFile {
  /** A `data:` URL with the bytes, or an `http(s)` link. */
  readonly url: string;
  readonly name?: string;
  /** `image` for an image part; `file` otherwise. */
  readonly kind: string;
  /** Where it was in the request, for the 400 that names it (`messages[2].content[1]`). */
  readonly where: string;
}

/**
 * Takes the files of an API or console request into the conversation's inbox, in order: a `data:` URL's bytes are
 * checked and saved like a chat app's download (so the transcript holds the saved path, never the base64); an
 * `http(s)` link is described to the model with its link, not fetched (the server does not fetch addresses a
 * client names). Any other URL is refused with `request.invalid` before anything is saved.
 */
export async function receiveRequestFiles(
  intake: AttachmentIntake,
  sessionKey: string,
  files: readonly RequestFile[],
  signal?: AbortSignal,
): Promise<ReceivedAttachment[]> {
  const parsed = files.map((file) => {
    if (file.url.startsWith("https://") || file.url.startsWith("http://")) return { file, inline: undefined };
    const content = parseDataUrl(file.url);
    if (content === undefined)
      throw new UserError(
        "request.invalid",
        `${file.where} must be a data: URL (base64) or an http(s) link; got ${JSON.stringify(file.url.slice(0, 40))}.`,
      );
    const inline: InlineFile = {
      bytes: content.bytes,
      kind: file.kind,
      ...(file.name === undefined ? {} : { name: file.name }),
      ...(content.contentType === undefined ? {} : { contentType: content.contentType }),
    };
    return { file, inline };
  });
  const inline = parsed.flatMap((entry) => (entry.inline === undefined ? [] : [entry.inline]));
  const saved = await intake.receiveFiles(sessionKey, inline, signal);
  let next = 0;
  return parsed.map((entry): ReceivedAttachment => {
    if (entry.inline !== undefined) return saved[next++] as ReceivedAttachment;
    return {
      status: "not-downloaded",
      attachment: {
        kind: entry.file.kind,
        url: entry.file.url,
        ...(entry.file.name === undefined ? {} : { name: entry.file.name }),
      },
    };
  });
}
