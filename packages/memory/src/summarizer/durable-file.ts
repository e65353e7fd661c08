import { createHash, randomBytes } from "node:crypto";
import { chmod, type FileHandle, open, rename, stat, unlink } from "node:fs/promises";
import * as path from "node:path";

/** The SHA-256 of a text (UTF-8), hex: how memory files and base versions are compared. */
export function hashContent(content: string): string {
  return createHash("sha256").update(content, "utf8").digest("hex");
}

/** The `code` of a Node.js system error, if it has one. */
export function errorCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

/**
 * Flushes a directory's entries to disk, so a rename or a new file inside it survives a power cut.
 * File systems that cannot fsync a directory (EINVAL, EISDIR on some platforms) are tolerated: the
 * rename is still atomic there, only its durability is up to the OS.
 */
export async function fsyncDirectory(directory: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(directory, "r");
    await handle.sync();
  } catch (error) {
    const code = errorCode(error);
    if (code !== "EINVAL" && code !== "EISDIR" && code !== "EPERM" && code !== "ENOTSUP") throw error;
  } finally {
    await handle?.close();
  }
}

async function existingMode(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).mode & 0o7777;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Replaces `file` with `content` so that a crash at any moment leaves either the old or the new
 * version, never a mix: write a temp file beside it, fsync it, rename it over the file, fsync the
 * directory. The existing file's permission bits are kept. The parent directory must exist.
 */
export async function writeFileDurable(file: string, content: string): Promise<void> {
  const directory = path.dirname(file);
  // A dot name that does not end in .md: file watchers and memory listings skip it.
  const temp = path.join(directory, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  const mode = await existingMode(file);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, "wx", 0o644);
    await handle.writeFile(content, "utf8");
    if (mode !== undefined) await chmod(temp, mode);
    await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, file);
  } catch (error) {
    await handle?.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
  await fsyncDirectory(directory);
}
