import { type MemoryScope, SHARED_DIRECTORY, sharedScopePrefix } from "@almanac/memory-files";

/** The folder, in a scope's part of the workspace, that files people send are saved in (one folder per day). */
export const INBOX_FOLDER = "inbox";

/**
 * Where a scope's files of one local day go, relative to the workspace: `inbox/YYYY-MM-DD` for the owner's
 * conversations, `shared/<scope folder>/inbox/YYYY-MM-DD` for a shared chat's, so a group's files never land in
 * the owner's private part of the workspace.
 */
export function inboxFolder(scope: MemoryScope, date: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new RangeError(`not a local date: ${date}`);
  return scope.kind === "owner"
    ? `${INBOX_FOLDER}/${date}`
    : `${sharedScopePrefix(scope)}${INBOX_FOLDER}/${date}`;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Whether a workspace-relative path names a file in some scope's inbox (`inbox/<date>/<name>` or
 * `shared/<folder>/inbox/<date>/<name>`), with no empty, hidden or `..` segment, backslash or NUL: the only files
 * an image reference in a message may point at.
 */
export function isInboxFilePath(relativePath: string): boolean {
  if (relativePath.includes("\\") || relativePath.includes("\0")) return false;
  const segments = relativePath.split("/");
  if (segments.some((segment) => segment === "" || segment.startsWith("."))) return false;
  const [first, second, third, fourth, fifth] = segments;
  if (segments.length === 3) return first === INBOX_FOLDER && DATE.test(second ?? "");
  return (
    segments.length === 5 &&
    first === SHARED_DIRECTORY &&
    second !== undefined &&
    third === INBOX_FOLDER &&
    DATE.test(fourth ?? "") &&
    fifth !== undefined
  );
}

/** Longest file name kept, in UTF-8 bytes (file systems allow 255; a collision suffix and temp prefix need room). */
const MAX_NAME_BYTES = 120;

/** Extensions that name the same type as the one the content was detected as. */
const SAME_TYPE: Readonly<Record<string, readonly string[]>> = {
  jpg: ["jpeg", "jpe"],
  tif: ["tiff"],
  mp4: ["m4v"],
  m4a: ["mp4a"],
  opus: ["ogg", "oga"],
  ogg: ["oga", "opus"],
  heic: ["heif"],
};

function splitExtension(name: string): { readonly stem: string; readonly extension: string } {
  const dot = name.lastIndexOf(".");
  if (dot <= 0 || dot === name.length - 1) return { stem: name, extension: "" };
  return { stem: name.slice(0, dot), extension: name.slice(dot + 1) };
}

function cutToBytes(text: string, maxBytes: number): string {
  const encoder = new TextEncoder();
  if (encoder.encode(text).length <= maxBytes) return text;
  let cut = "";
  for (const character of text) {
    if (encoder.encode(cut + character).length > maxBytes) break;
    cut += character;
  }
  return cut;
}

/**
 * A file name safe on every file system, from the name the platform gave (which is untrusted): its last path
 * segment only, no control or reserved characters, not hidden, at most {@link MAX_NAME_BYTES} bytes, and with the
 * extension of the type the content was detected as (`detectedExtension`) when the given one says otherwise: a
 * PNG sent as `photo.jpg` is saved as `photo.png`.
 * @param fallbackStem the name's stem when the platform gave none (`image`, `voice-message`…)
 */
export function safeFileName(
  given: string | undefined,
  fallbackStem: string,
  detectedExtension: string | undefined,
): string {
  const base = (given ?? "").split(/[/\\]/).pop() ?? "";
  const cleaned = base
    .normalize("NFC")
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
    .replace(/[\u0000-\u001f\u007f<>:"|?*]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^[.\s]+/, "");
  const { stem, extension } = splitExtension(cleaned);
  const keptExtension = extension.toLowerCase();
  const finalExtension =
    detectedExtension === undefined
      ? keptExtension
      : keptExtension === detectedExtension || (SAME_TYPE[detectedExtension] ?? []).includes(keptExtension)
        ? keptExtension
        : detectedExtension;
  const safeStem = stem.trim() === "" ? fallbackStem : stem.trim().replace(/[. ]+$/, "") || fallbackStem;
  const suffix = finalExtension === "" ? "" : `.${finalExtension.replace(/[^a-z0-9]/g, "").slice(0, 10)}`;
  return `${cutToBytes(safeStem, MAX_NAME_BYTES - suffix.length)}${suffix}`;
}

/** The name a collision gives the `n`th file of the same name (n ≥ 2): `photo-2.jpg`. */
export function numberedFileName(name: string, n: number): string {
  const { stem, extension } = splitExtension(name);
  return extension === "" ? `${stem}-${n}` : `${stem}-${n}.${extension}`;
}
