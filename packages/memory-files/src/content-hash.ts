import { createHash } from "node:crypto";

/** The SHA-256 of a text (UTF-8), hex: how memory files and base versions are compared. */
export function hashContent(content: string): string {
  return createHash("sha256").update(content, "utf8").digest("hex");
}
