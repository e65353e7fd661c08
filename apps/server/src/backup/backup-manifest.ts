import { z } from "zod";

/** What `manifest.json` names as its format; anything else is not an Almanac backup. */
export const BACKUP_FORMAT = "almanac-backup";
/** The manifest version this code writes and reads; a newer one is refused with a message saying so. */
export const BACKUP_FORMAT_VERSION = 1;
/** The manifest's entry in the archive, after every file it lists. */
export const MANIFEST_ENTRY = "manifest.json";
/** The folder the data directory's files sit in inside the archive (`tar -x` gives a usable `data/`). */
export const DATA_ENTRY_PREFIX = "data/";

/** One file of the archive: its path in the data directory, size, SHA-256 and modification time. */
export interface ManifestFile {
  /** Relative to the data directory, `/`-separated (`sessions/api%3Adefault%3Aapi%3Acli.jsonl`). */
  readonly path: string;
  readonly size: number;
  /** Lower-case hex. */
  readonly sha256: string;
  /** Milliseconds since the epoch; restored, so the index's start-up sync sees the Markdown unchanged. */
  readonly mtimeMs: number;
}

/** Something present in the data directory that the archive does not hold, and why. */
export interface ManifestExclusion {
  readonly path: string;
  readonly reason: string;
}

/** The contents of `manifest.json`. */
export interface BackupManifest {
  readonly format: typeof BACKUP_FORMAT;
  readonly formatVersion: number;
  readonly almanacVersion: string;
  /** ISO 8601, UTC. */
  readonly createdAt: string;
  /** `server`: made by the running server; `cli`: by `almanac backup create` while no server ran. */
  readonly createdBy: "server" | "cli";
  readonly files: readonly ManifestFile[];
  readonly excluded: readonly ManifestExclusion[];
}

/**
 * True for a path that stays inside the folder it is joined to on every platform: relative, `/`-separated,
 * no empty, `.` or `..` segment, no backslash, colon-drive or NUL. The one check verify and restore share.
 */
export function isSafeRelativePath(path: string): boolean {
  if (path === "" || path.length > 4096 || path.startsWith("/") || /[\\\0]/.test(path)) return false;
  if (/^[A-Za-z]:/.test(path)) return false;
  return path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}

const safePath = z.string().refine(isSafeRelativePath, "not a safe relative path");

const manifestSchema = z.object({
  format: z.literal(BACKUP_FORMAT),
  formatVersion: z.number().int().positive(),
  almanacVersion: z.string(),
  createdAt: z.string(),
  createdBy: z.enum(["server", "cli"]),
  files: z.array(
    z.object({
      path: safePath,
      size: z.number().int().nonnegative(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      mtimeMs: z.number().nonnegative(),
    }),
  ),
  excluded: z.array(z.object({ path: z.string(), reason: z.string() })),
});

/** A manifest that could be read, or why it could not (the text names what is wrong). */
export type ParsedManifest =
  | { readonly ok: true; readonly manifest: BackupManifest }
  | { readonly ok: false; readonly problem: string };

/** Parses `manifest.json` (untrusted: it comes from a file a person hands us). */
export function parseManifest(text: string): ParsedManifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, problem: "manifest.json is not JSON" };
  }
  const version = (value as { formatVersion?: unknown } | null)?.formatVersion;
  if (typeof version === "number" && version > BACKUP_FORMAT_VERSION)
    return {
      ok: false,
      problem: `manifest.json has format version ${version}; this Almanac reads version ${BACKUP_FORMAT_VERSION} (use a newer Almanac)`,
    };
  const parsed = manifestSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      problem: `manifest.json is not an Almanac backup manifest (${issue?.path.join(".") || "root"}: ${issue?.message ?? "invalid"})`,
    };
  }
  return { ok: true, manifest: parsed.data };
}
