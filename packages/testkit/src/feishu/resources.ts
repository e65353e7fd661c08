import { randomBytes } from "node:crypto";
import { z } from "zod";

/** Bytes a test puts behind a message resource (an image, file, voice or video a user sent). */
export interface FakeResource {
  readonly bytes: Uint8Array;
  /** `image` for image keys (downloaded with `type=image`), `file` for files, voice and video (`type=file`). */
  readonly type: "image" | "file";
  /** Default `image/png` for images, `application/octet-stream` for files. */
  readonly contentType?: string;
  /** Sent in `content-disposition`. */
  readonly fileName?: string;
  /** Sends no `content-length` (chunked), so a client learns the size only by reading. */
  readonly omitLength?: boolean;
  /** Sends this many bytes, then nothing more until the client goes away (a download that stalls). */
  readonly stallAfterBytes?: number;
}

/** A file or image the bot uploaded (`POST /open-apis/im/v1/images` or `/files`). */
export interface FakeUpload {
  readonly kind: "image" | "file";
  /** `image_key` or `file_key` the fake answered with. */
  readonly key: string;
  /** `image_type` of an image, `file_type` of a file. */
  readonly type: string;
  /** `file_name` of a file; the part's file name of an image. */
  readonly fileName: string;
  /** Media duration in milliseconds, when the upload said. */
  readonly durationMs?: number;
  readonly bytes: Uint8Array;
}

/** A multipart form as the fake read it: text fields and files. */
export interface FakeForm {
  readonly fields: Readonly<Record<string, string>>;
  readonly files: Readonly<Record<string, { readonly name: string; readonly bytes: Uint8Array }>>;
}

/** What the resource routes answer: JSON (the REST layer's shape) or bytes. */
export type ResourceAnswer =
  | { readonly kind: "json"; readonly status: number; readonly body: unknown }
  | {
      readonly kind: "bytes";
      readonly bytes: Uint8Array;
      readonly headers: Readonly<Record<string, string>>;
      readonly stallAfterBytes?: number;
    };

/** Feishu's limits: images up to 10 MB, files up to 30 MB, neither empty. */
export const FEISHU_IMAGE_UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;
export const FEISHU_FILE_UPLOAD_LIMIT_BYTES = 30 * 1024 * 1024;

const imageFields = z.object({ image_type: z.enum(["message", "avatar"]) });
const fileFields = z.object({
  file_type: z.enum(["opus", "mp4", "pdf", "doc", "xls", "ppt", "stream"]),
  file_name: z.string().min(1),
  duration: z.coerce.number().int().nonnegative().optional(),
});

const json = (status: number, code: number, msg: string, data?: unknown): ResourceAnswer => ({
  kind: "json",
  status,
  body: { code, msg, ...(data === undefined ? {} : { data }) },
});

/** The resource side of the fake: message resources to download, and what the bot uploaded. */
export class ResourceStore {
  readonly #resources = new Map<string, FakeResource>();
  readonly #uploads: FakeUpload[] = [];

  /** Puts bytes behind `key` of message `messageId`. */
  add(messageId: string, key: string, resource: FakeResource): void {
    this.#resources.set(`${messageId}\n${key}`, resource);
  }

  uploads(): FakeUpload[] {
    return [...this.#uploads];
  }

  /** True when the bot uploaded an image (`image`) or file (`file`) with this key. */
  uploaded(kind: FakeUpload["kind"], key: string): boolean {
    return this.#uploads.some((upload) => upload.kind === kind && upload.key === key);
  }

  /**
   * `GET /open-apis/im/v1/messages/:message_id/resources/:file_key?type=image|file`: the bytes, with Feishu's
   * checks (the type must be given and match: images by `image`, everything else by `file`).
   */
  download(messageId: string, key: string, type: string | undefined): ResourceAnswer {
    if (type !== "image" && type !== "file") {
      return json(400, 234001, "Invalid request param. type must be image or file.");
    }
    const resource = this.#resources.get(`${messageId}\n${key}`);
    if (resource === undefined) return json(400, 234003, "File not in msg.");
    if (resource.type !== type)
      return json(400, 234001, `Invalid request param. The resource is not a ${type}.`);
    const contentType =
      resource.contentType ?? (resource.type === "image" ? "image/png" : "application/octet-stream");
    const headers: Record<string, string> = {
      "content-type": contentType,
      ...(resource.omitLength ? {} : { "content-length": String(resource.bytes.length) }),
      ...(resource.fileName === undefined
        ? {}
        : { "content-disposition": `attachment; filename="${encodeURIComponent(resource.fileName)}"` }),
    };
    return {
      kind: "bytes",
      bytes: resource.bytes,
      headers,
      ...(resource.stallAfterBytes === undefined ? {} : { stallAfterBytes: resource.stallAfterBytes }),
    };
  }

  /** `POST /open-apis/im/v1/images` (multipart: `image_type`, `image`). */
  uploadImage(form: FakeForm | undefined): ResourceAnswer {
    const fields = imageFields.safeParse(form?.fields ?? {});
    const image = form?.files.image;
    if (!fields.success || image === undefined) {
      return json(400, 234001, "Invalid request param. image_type and image are required.");
    }
    if (image.bytes.length === 0) return json(400, 234010, "File's size can't be 0.");
    if (image.bytes.length > FEISHU_IMAGE_UPLOAD_LIMIT_BYTES) {
      return json(400, 234006, "The file size exceed the max value.");
    }
    const key = `img_v3_${randomBytes(10).toString("hex")}`;
    this.#uploads.push({
      kind: "image",
      key,
      type: fields.data.image_type,
      fileName: image.name,
      bytes: image.bytes,
    });
    return json(200, 0, "success", { image_key: key });
  }

  /** `POST /open-apis/im/v1/files` (multipart: `file_type`, `file_name`, `duration?`, `file`). */
  uploadFile(form: FakeForm | undefined): ResourceAnswer {
    const fields = fileFields.safeParse(form?.fields ?? {});
    const file = form?.files.file;
    if (!fields.success || file === undefined) {
      return json(400, 234001, "Invalid request param. file_type, file_name and file are required.");
    }
    if (file.bytes.length === 0) return json(400, 234010, "File's size can't be 0.");
    if (file.bytes.length > FEISHU_FILE_UPLOAD_LIMIT_BYTES) {
      return json(400, 234006, "The file size exceed the max value.");
    }
    const key = `file_v3_${randomBytes(10).toString("hex")}`;
    const { file_type: type, file_name: fileName, duration } = fields.data;
    this.#uploads.push({
      kind: "file",
      key,
      type,
      fileName,
      ...(duration === undefined ? {} : { durationMs: duration }),
      bytes: file.bytes,
    });
    return json(200, 0, "success", { file_key: key });
  }
}

/** Reads a multipart body (as Feishu's upload routes take it); undefined when it is not one. */
export async function readMultipart(bytes: Uint8Array, contentType: string): Promise<FakeForm | undefined> {
  if (!contentType.toLowerCase().startsWith("multipart/form-data")) return undefined;
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(bytes), { headers: { "content-type": contentType } }).formData();
  } catch {
    return undefined;
  }
  const fields: Record<string, string> = {};
  const files: Record<string, { name: string; bytes: Uint8Array }> = {};
  const blobs: [string, File][] = [];
  form.forEach((value, name) => {
    if (typeof value === "string") fields[name] = value;
    else blobs.push([name, value]);
  });
  for (const [name, file] of blobs) {
    files[name] = { name: file.name, bytes: new Uint8Array(await file.arrayBuffer()) };
  }
  return { fields, files };
}
