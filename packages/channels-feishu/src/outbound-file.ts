import { type OutboundFile, UserError } from "@almanac/core";
import type { FeishuFileType } from "./feishu-resources.js";

/** Feishu's limit on an uploaded image (`POST /open-apis/im/v1/images`). */
export const FEISHU_IMAGE_UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;
/** Feishu's limit on an uploaded file (`POST /open-apis/im/v1/files`). */
export const FEISHU_FILE_UPLOAD_LIMIT_BYTES = 30 * 1024 * 1024;

/** Image types Feishu shows as an image message. */
const IMAGE_TYPES = new Set([
  "image/jpeg",
  "image/png",
  "image/webp",
  "image/gif",
  "image/tiff",
  "image/bmp",
  "image/x-icon",
  "image/vnd.microsoft.icon",
]);

/** `file_type` by extension: the media Feishu plays and the documents it previews; anything else is `stream`. */
const FILE_TYPES: Readonly<Record<string, FeishuFileType>> = {
  opus: "opus",
  mp4: "mp4",
  pdf: "pdf",
  doc: "doc",
  docx: "doc",
  xls: "xls",
  xlsx: "xls",
  ppt: "ppt",
  pptx: "ppt",
};

/** How a file is sent: as an image message, or uploaded as a file and sent as a file (or voice) message. */
export type UploadPlan =
  | { readonly kind: "image" }
  | { readonly kind: "file"; readonly fileType: FeishuFileType; readonly msgType: "file" | "audio" };

/**
 * Decides how `file` goes to Feishu: an image it shows (up to 10 MB) as an image message; anything else, and a
 * larger image, as a file (up to 30 MB) with its `file_type` from the extension. An Opus recording goes as a voice
 * message; a video goes as a file, since a playable video message needs a cover image.
 * @throws UserError `feishu.upload_too_large` over 30 MB
 */
export function planUpload(file: Pick<OutboundFile, "name" | "bytes" | "contentType">): UploadPlan {
  const size = file.bytes.length;
  const contentType = file.contentType.split(";")[0]?.trim().toLowerCase() ?? "";
  if (IMAGE_TYPES.has(contentType) && size <= FEISHU_IMAGE_UPLOAD_LIMIT_BYTES) return { kind: "image" };
  if (size > FEISHU_FILE_UPLOAD_LIMIT_BYTES) {
    throw new UserError(
      "feishu.upload_too_large",
      `"${file.name}" is ${(size / 1_048_576).toFixed(1)} MB; Feishu takes files up to 30 MB (images shown inline up to 10 MB).`,
    );
  }
  const extension = /\.([^./\\]+)$/.exec(file.name)?.[1]?.toLowerCase() ?? "";
  const fileType = FILE_TYPES[extension] ?? "stream";
  return { kind: "file", fileType, msgType: fileType === "opus" ? "audio" : "file" };
}
