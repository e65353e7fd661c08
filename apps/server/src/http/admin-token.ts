import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { PRIVATE_DIRECTORY_MODE, writeFileDurably } from "@almanac/durable-write";

/** The admin token in force and whether it was generated just now (then it is printed once). */
export interface AdminToken {
  readonly token: string;
  readonly source: "config" | "file" | "generated";
  readonly file: string;
}

/**
 * Returns the configured token, or the one stored in `<home>/admin-token`, or generates and stores a new one
 * (mode 0600) on first start.
 */
export async function ensureAdminToken(home: string, configured: string | undefined): Promise<AdminToken> {
  const file = join(home, "admin-token");
  if (configured !== undefined) return { token: configured, source: "config", file };
  try {
    const stored = (await readFile(file, "utf8")).trim();
    if (stored.length >= 16) {
      await chmod(file, 0o600);
      return { token: stored, source: "file", file };
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  await mkdir(home, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  const token = `alm_${randomBytes(24).toString("base64url")}`;
  await writeFileDurably(file, `${token}\n`, { mode: 0o600 });
  return { token, source: "generated", file };
}
