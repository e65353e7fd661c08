import type { IncomingMessage } from "node:http";

/** One file part of a `multipart/form-data` body, as a client uploaded it. */
export interface MultipartFile {
  /** The form field, e.g. `files[0]`. */
  readonly field: string;
  readonly filename: string;
  readonly contentType?: string;
  readonly bytes: Buffer;
}

/** A parsed `multipart/form-data` body: text fields by name, and the file parts in order. */
export interface MultipartBody {
  readonly fields: ReadonlyMap<string, string>;
  readonly files: readonly MultipartFile[];
}

/** Reads a whole request body as bytes (uploads are binary: decoding them as text would corrupt them). */
export async function readRequestBytes(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

/** The boundary of a `multipart/form-data` content type, or undefined for any other type. */
export function multipartBoundary(contentType: string | undefined): string | undefined {
  if (contentType === undefined || !/^multipart\/form-data\b/i.test(contentType)) return undefined;
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}

/**
 * Parses a `multipart/form-data` body (RFC 7578) the way undici's `FormData` writes it; undefined when it is
 * malformed (no closing delimiter, a part without headers or without a name).
 */
export function parseMultipart(body: Buffer, boundary: string): MultipartBody | undefined {
  const delimiter = Buffer.from(`--${boundary}`);
  const fields = new Map<string, string>();
  const files: MultipartFile[] = [];
  let position = body.indexOf(delimiter);
  if (position < 0) return undefined;
  for (;;) {
    position += delimiter.length;
    if (body.subarray(position, position + 2).toString("latin1") === "--") return { fields, files };
    if (body.subarray(position, position + 2).toString("latin1") !== "\r\n") return undefined;
    const headersEnd = body.indexOf("\r\n\r\n", position);
    if (headersEnd < 0) return undefined;
    const headers = body
      .subarray(position + 2, headersEnd)
      .toString("utf8")
      .split("\r\n");
    const next = body.indexOf(Buffer.concat([Buffer.from("\r\n"), delimiter]), headersEnd + 4);
    if (next < 0) return undefined;
    const content = body.subarray(headersEnd + 4, next);
    const disposition = headerValue(headers, "content-disposition") ?? "";
    const name = /\bname="([^"]*)"/.exec(disposition)?.[1];
    if (name === undefined) return undefined;
    const filename = /\bfilename="([^"]*)"/.exec(disposition)?.[1];
    if (filename === undefined) {
      fields.set(name, content.toString("utf8"));
    } else {
      const contentType = headerValue(headers, "content-type");
      files.push({
        field: name,
        // undici escapes only these three in a quoted filename.
        filename: filename.replace(/%22/g, '"').replace(/%0D/gi, "\r").replace(/%0A/gi, "\n"),
        ...(contentType === undefined ? {} : { contentType }),
        bytes: Buffer.from(content),
      });
    }
    position = next + 2;
  }
}

function headerValue(headers: readonly string[], name: string): string | undefined {
  for (const line of headers) {
    const colon = line.indexOf(":");
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name) return line.slice(colon + 1).trim();
  }
  return undefined;
}
