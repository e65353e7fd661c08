import { Readable } from "node:stream";
import { AttachmentTooLargeError, type DownloadedAttachment, type DownloadLimits } from "@almanac/core";
import type * as lark from "@larksuiteoapi/node-sdk";
import { z } from "zod";
import { FeishuApiError } from "./errors.js";
import { callOnce, fromPlatformCode, fromThrown, invalidResponse } from "./feishu-api.js";

/** Feishu's `file_type` of an uploaded file: the media types it plays, the document types it previews, or `stream`. */
export type FeishuFileType = "opus" | "mp4" | "pdf" | "doc" | "xls" | "ppt" | "stream";

/**
 * Files in and out of Feishu: message resources downloaded within limits, images and files uploaded for sending.
 *
 * These go through the SDK's own HTTP client (`client.httpInstance`, so proxies and agents configured for it
 * apply) and its tenant token cache, but not through its generated helpers: `im.messageResource.get` takes no
 * abort signal, and `im.image.create` / `im.file.create` hand a Buffer to `form-data`, which fails with
 * "source.on is not a function" in current SDK versions. A spec FormData with a named Blob is what axios sends
 * as a proper multipart body.
 */
export interface FeishuResourceApi {
  /**
   * `GET /open-apis/im/v1/messages/:message_id/resources/:file_key?type=image|file`, streamed: stops at
   * `limits.maxBytes` (throws core's `AttachmentTooLargeError`) and when `limits.signal` aborts.
   */
  download(
    messageId: string,
    key: string,
    type: "image" | "file",
    limits: DownloadLimits,
  ): Promise<DownloadedAttachment>;
  /** `POST /open-apis/im/v1/images` (`image_type=message`); returns the `image_key`. */
  uploadImage(bytes: Uint8Array, name: string): Promise<string>;
  /** `POST /open-apis/im/v1/files`; returns the `file_key`. */
  uploadFile(bytes: Uint8Array, name: string, fileType: FeishuFileType): Promise<string>;
}

/** Dependencies of {@link createFeishuResourceApi}. */
export interface FeishuResourceApiOptions {
  readonly client: lark.Client;
  /** The open platform base URL, without a trailing slash. */
  readonly domain: string;
}

/** Most of an error body read from a failed download (Feishu's JSON envelope is far smaller). */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

const streamedSchema = z.object({
  data: z.custom<Readable>((value) => value instanceof Readable),
  headers: z.unknown(),
});
const envelopeSchema = z.looseObject({ code: z.number(), msg: z.string().optional() });
const imageKeySchema = z.object({ image_key: z.string().min(1) });
const fileKeySchema = z.object({ file_key: z.string().min(1) });

/** Creates the resource calls over `client`'s HTTP instance and tenant token. */
export function createFeishuResourceApi(options: FeishuResourceApiOptions): FeishuResourceApi {
  const { client, domain } = options;

  const authorization = async (operation: string): Promise<string> => {
    try {
      const token: unknown = await client.tokenManager.getTenantAccessToken();
      if (typeof token !== "string" || token === "") throw invalidResponse(operation);
      return `Bearer ${token}`;
    } catch (error) {
      throw error instanceof FeishuApiError ? error : fromThrown(operation, error);
    }
  };

  const upload = async (path: string, form: FormData): Promise<unknown> => {
    const operation = `POST ${path}`;
    const headers = { Authorization: await authorization(operation) };
    const body = await callOnce(operation, () =>
      client.httpInstance.request({ url: `${domain}${path}`, method: "POST", data: form, headers }),
    );
    return body.data;
  };

  return {
    async download(messageId, key, type, limits) {
      const path = `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/resources/${encodeURIComponent(key)}`;
      const operation = `GET ${path}`;
      const headers = { Authorization: await authorization(operation) };
      if (limits.signal.aborted) throw cancelled(operation);
      // `signal` is axios's own option, which the SDK's narrower request type does not list.
      const request: Parameters<typeof client.httpInstance.request>[0] & { signal: AbortSignal } = {
        url: `${domain}${path}`,
        method: "GET",
        params: { type },
        headers,
        responseType: "stream",
        $return_headers: true,
        signal: limits.signal,
      };
      let answer: unknown;
      try {
        answer = await client.httpInstance.request(request);
      } catch (error) {
        if (limits.signal.aborted) throw cancelled(operation);
        throw await fromFailedDownload(operation, error);
      }
      const parsed = streamedSchema.safeParse(answer);
      if (!parsed.success) throw invalidResponse(operation);
      const { data: stream } = parsed.data;
      const stated = Number(headerOf(parsed.data.headers, "content-length"));
      if (Number.isFinite(stated) && stated > limits.maxBytes) {
        stream.destroy();
        throw new AttachmentTooLargeError(limits.maxBytes, stated);
      }
      const bytes = await readWithin(stream, limits, operation);
      const contentType = headerOf(parsed.data.headers, "content-type")?.split(";")[0]?.trim();
      const name = fileNameOf(headerOf(parsed.data.headers, "content-disposition"));
      return {
        bytes,
        ...(contentType ? { contentType } : {}),
        ...(name === undefined ? {} : { name }),
      };
    },
    async uploadImage(bytes, name) {
      const form = new FormData();
      form.append("image_type", "message");
      form.append("image", new Blob([new Uint8Array(bytes)]), name);
      const parsed = imageKeySchema.safeParse(await upload("/open-apis/im/v1/images", form));
      if (!parsed.success) throw invalidResponse("POST /open-apis/im/v1/images");
      return parsed.data.image_key;
    },
    async uploadFile(bytes, name, fileType) {
      const form = new FormData();
      form.append("file_type", fileType);
      form.append("file_name", name);
      form.append("file", new Blob([new Uint8Array(bytes)]), name);
      const parsed = fileKeySchema.safeParse(await upload("/open-apis/im/v1/files", form));
      if (!parsed.success) throw invalidResponse("POST /open-apis/im/v1/files");
      return parsed.data.file_key;
    },
  };
}

/** Reads a download to its end, stopping past `maxBytes` or when the signal aborts. */
async function readWithin(stream: Readable, limits: DownloadLimits, operation: string): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let total = 0;
  const onAbort = (): void => {
    stream.destroy();
  };
  limits.signal.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const chunk of stream) {
      const piece = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
      total += piece.length;
      if (total > limits.maxBytes) {
        stream.destroy();
        throw new AttachmentTooLargeError(limits.maxBytes);
      }
      chunks.push(piece);
    }
  } catch (error) {
    if (error instanceof AttachmentTooLargeError) throw error;
    if (limits.signal.aborted) throw cancelled(operation);
    const message = error instanceof Error ? error.message : String(error);
    throw new FeishuApiError("feishu.network_error", `Feishu ${operation} was cut off: ${message}`, {
      isRetryable: true,
    });
  } finally {
    limits.signal.removeEventListener("abort", onAbort);
  }
  // A stream that ends early without an error when destroyed by the abort.
  if (limits.signal.aborted) throw cancelled(operation);
  return new Uint8Array(Buffer.concat(chunks));
}

function cancelled(operation: string): FeishuApiError {
  return new FeishuApiError("feishu.network_error", `Feishu ${operation} was cancelled.`, {
    isRetryable: false,
  });
}

/** A failed download: Feishu's JSON error arrives as a stream too, so it is read (a little) before mapping. */
async function fromFailedDownload(operation: string, error: unknown): Promise<FeishuApiError> {
  const response: unknown = Reflect.get(Object(error), "response");
  const status: unknown = Reflect.get(Object(response), "status");
  const data: unknown = Reflect.get(Object(response), "data");
  if (typeof status !== "number" || !(data instanceof Readable)) return fromThrown(operation, error);
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of data) {
      const piece = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
      total += piece.length;
      if (total > MAX_ERROR_BODY_BYTES) break;
      chunks.push(piece);
    }
  } catch {
    // The body is only for the message; the status still says what happened.
  } finally {
    data.destroy();
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    body = undefined;
  }
  const envelope = envelopeSchema.safeParse(body);
  if (envelope.success) return fromPlatformCode(operation, envelope.data.code, envelope.data.msg, status);
  return new FeishuApiError("feishu.api_error", `Feishu ${operation} failed with HTTP ${status}.`, {
    isRetryable: status === 429 || status >= 500,
    status,
  });
}

/** A response header as a string (axios hands headers over as an object with lower-case names). */
function headerOf(headers: unknown, name: string): string | undefined {
  const value: unknown = Reflect.get(Object(headers), name);
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  return undefined;
}

/** The file name of a `content-disposition` header (`filename*=UTF-8''…` or `filename="…"`). */
function fileNameOf(disposition: string | undefined): string | undefined {
  if (disposition === undefined) return undefined;
  const extended = /filename\*\s*=\s*(?:UTF-8|utf-8)''([^;]+)/.exec(disposition);
  const plain = /filename\s*=\s*"?([^";]+)"?/.exec(disposition);
  const raw = extended?.[1] ?? plain?.[1];
  if (raw === undefined) return undefined;
  try {
    return decodeURIComponent(raw.trim());
  } catch {
    return raw.trim();
  }
}
