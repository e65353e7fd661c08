import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/** Every file under `directory`, however deep, hidden ones (a durable write's temp files) too; [] if it is not there. */
export async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** A file's text, or "" when it is gone since it was listed (a durable write's temp file, renamed meanwhile). */
export async function readIfPresent(file: string): Promise<string> {
  return readFile(file, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return "";
    throw error;
  });
}
