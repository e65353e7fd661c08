import { parseJsonBody } from "../http-io.js";
import type { FakeRestReply } from "./fake-discord-interactions.js";
import { type MultipartFile, multipartBoundary, parseMultipart } from "./fake-discord-multipart.js";
import { invalidFormBody, MAX_FILES_PER_MESSAGE } from "./fake-discord-schemas.js";

/** A file of a message create as Discord takes it: its name, type and bytes. */
export interface UploadedFile {
  readonly name: string;
  readonly contentType?: string;
  readonly bytes: Buffer;
}

/**
 * The files of a message as Discord takes them (name from the `attachments` entry whose id is the part's index,
 * else the part's filename), or the refusal: too many, one over the upload limit (413, 40005), or an
 * `attachments` entry naming no uploaded part.
 */
export function checkUploads(
  files: readonly MultipartFile[],
  attachments: readonly { readonly id: number | string; readonly filename?: string | undefined }[],
  uploadLimitBytes: number,
): UploadedFile[] | FakeRestReply {
  if (files.length > MAX_FILES_PER_MESSAGE) {
    return {
      status: 400,
      body: invalidFormBody("files", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length."),
    };
  }
  if (files.some((file) => file.bytes.length > uploadLimitBytes)) {
    return { status: 413, body: { message: "Request entity too large", code: 40005 } };
  }
  const indexOf = (file: MultipartFile) => /^files\[(\d+)\]$/.exec(file.field)?.[1];
  for (const attachment of attachments) {
    if (!files.some((file) => indexOf(file) === String(attachment.id))) {
      return {
        status: 400,
        body: invalidFormBody(
          "attachments",
          "ATTACHMENT_NOT_FOUND",
          `Unknown attachment id ${attachment.id}`,
        ),
      };
    }
  }
  return files.map((file) => {
    const named = attachments.find((attachment) => String(attachment.id) === indexOf(file))?.filename;
    return {
      name: named ?? file.filename,
      ...(file.contentType === undefined ? {} : { contentType: file.contentType }),
      bytes: file.bytes,
    };
  });
}

/**
 * A request's body: JSON, or for `multipart/form-data` (uploads) the `payload_json` part parsed as JSON plus
 * the file parts. A malformed multipart body reads as the raw text, which every schema refuses.
 */
export function readRequestBody(
  bytes: Buffer,
  contentType: string | undefined,
): { readonly body: unknown; readonly files: readonly MultipartFile[] } {
  const boundary = multipartBoundary(contentType);
  if (boundary === undefined) return { body: parseJsonBody(bytes.toString("utf8")).value, files: [] };
  const multipart = parseMultipart(bytes, boundary);
  if (multipart === undefined) return { body: bytes.toString("latin1"), files: [] };
  const payload = multipart.fields.get("payload_json");
  return { body: payload === undefined ? {} : parseJsonBody(payload).value, files: multipart.files };
}
