/** What a received file is, by its content. */
export type FileCategory = "image" | "audio" | "video" | "document" | "archive" | "text";

/** A type the server accepts, as detected from the bytes (never from the name). */
export interface DetectedType {
  /** MIME type without parameters, e.g. `image/jpeg`. */
  readonly mime: string;
  /** The usual extension, without the dot; undefined for text, which keeps the name's own. */
  readonly extension: string | undefined;
  readonly category: FileCategory;
}

/** The outcome of {@link detectFileType}: an accepted type, or why the file is refused (words for people). */
export type TypeCheck =
  | { readonly accepted: true; readonly type: DetectedType }
  | { readonly accepted: false; readonly reason: string };

/** Images a vision model can be shown: the formats sharp decodes and re-encodes for it. */
const VISIBLE_IMAGES: ReadonlySet<string> = new Set([
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/heic",
  "image/heif",
  "image/tiff",
  "image/bmp",
]);

/** Whether an image of this type can be resized and shown to a vision model. */
export function isVisibleImage(mime: string): boolean {
  return VISIBLE_IMAGES.has(mime);
}

const DOCUMENTS: ReadonlySet<string> = new Set([
  "application/pdf",
  "application/rtf",
  "application/epub+zip",
  "application/x-cfb", // Word, Excel and PowerPoint before 2007
]);

const ARCHIVES: ReadonlySet<string> = new Set([
  "application/zip",
  "application/gzip",
  "application/x-7z-compressed",
  "application/x-tar",
  "application/x-rar-compressed",
  "application/x-bzip2",
  "application/x-xz",
  "application/zstd",
]);

/** Content the server refuses whatever it is named: programs a person could be tricked into running. */
const EXECUTABLES: Readonly<Record<string, string>> = {
  "application/x-msdownload": "a Windows program",
  "application/vnd.microsoft.portable-executable": "a Windows program",
  "application/x-elf": "a Linux program",
  "application/x-mach-binary": "a macOS program",
  "application/x-executable": "a program",
  "application/x-sharedlib": "a program library",
  "application/java-archive": "a Java program",
  "application/vnd.android.package-archive": "an Android app",
  "application/x-apple-diskimage": "a macOS disk image",
  "application/x-msi": "a Windows installer",
  "application/x-deb": "a Debian package",
  "application/x-rpm": "an RPM package",
};

function categoryOf(mime: string): FileCategory | undefined {
  if (mime.startsWith("image/")) return "image";
  if (mime.startsWith("audio/")) return "audio";
  if (mime.startsWith("video/")) return "video";
  if (DOCUMENTS.has(mime)) return "document";
  if (mime.startsWith("application/vnd.openxmlformats-officedocument.")) return "document";
  if (mime.startsWith("application/vnd.oasis.opendocument.")) return "document";
  if (ARCHIVES.has(mime)) return "archive";
  return undefined;
}

/** True for bytes that read as UTF-8 text (no NUL, valid encoding): notes, code, CSV, JSON, Markdown. */
function isText(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

type FileTypeModule = typeof import("file-type");
let fileTypeModule: Promise<FileTypeModule> | undefined;

/**
 * The type of a received file, read from its content with `file-type` (magic numbers; a `.jpg` that is really a
 * program is a program): images, audio, video, documents, archives and UTF-8 text are accepted; programs and any
 * other binary are refused. `file-type` is loaded on the first file, not at start-up.
 */
export async function detectFileType(bytes: Uint8Array): Promise<TypeCheck> {
  fileTypeModule ??= import("file-type");
  const detected = await (await fileTypeModule).fileTypeFromBuffer(bytes);
  if (detected === undefined) {
    if (bytes.length === 0) return { accepted: false, reason: "the file is empty" };
    return isText(bytes)
      ? { accepted: true, type: { mime: "text/plain", extension: undefined, category: "text" } }
      : { accepted: false, reason: "its content is of no type I accept" };
  }
  const mime = detected.mime.split(";")[0]?.trim() ?? detected.mime;
  const program = EXECUTABLES[mime];
  if (program !== undefined) return { accepted: false, reason: `it is ${program} (${mime})` };
  const category = categoryOf(mime);
  if (category === undefined) return { accepted: false, reason: `I do not accept ${mime} files` };
  return { accepted: true, type: { mime, extension: detected.ext, category } };
}
