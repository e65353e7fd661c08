import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { type FileHandle, mkdir, open, utimes } from "node:fs/promises";
import { dirname, join } from "node:path";
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from "@almanac/durable-write";
import { Parser, type ReadEntry } from "tar";
import {
  type BackupManifest,
  DATA_ENTRY_PREFIX,
  isSafeRelativePath,
  MANIFEST_ENTRY,
  parseManifest,
} from "./backup-manifest.js";

/** What reading an archive found: its manifest, and every way it differs from it. */
export interface ArchiveCheck {
  /** True when the manifest was read and every file matches it: nothing missing, extra or altered. */
  readonly ok: boolean;
  readonly problems: readonly string[];
  readonly manifest: BackupManifest | undefined;
  /** Files read under `data/` and their bytes. */
  readonly files: number;
  readonly bytes: number;
}

/** Options of {@link checkArchive}. */
export interface CheckArchiveOptions {
  /**
   * Also write every file to this folder (created 0700 if missing; files 0600, folders 0700, modification
   * times as archived). Nothing is overwritten: a file that exists is a problem. The caller removes what was
   * written when the check fails.
   */
  readonly extractTo?: string;
}

const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

/**
 * Reads a backup archive from start to end and checks it against its manifest: every entry a regular file
 * under `data/` at a safe path, once, with the size and SHA-256 the manifest lists, and every listed file
 * present. The one check behind `almanac backup verify` and `restore`. Never throws for a bad archive: a file
 * that is not gzip, or is cut short, is reported as a problem.
 */
export async function checkArchive(file: string, options: CheckArchiveOptions = {}): Promise<ArchiveCheck> {
  const problems: string[] = [];
  const seen = new Map<string, { size: number; sha256: string; writeError?: string }>();
  let manifestText: string | undefined;
  let bytes = 0;
  const { extractTo } = options;
  if (extractTo !== undefined) await mkdir(extractTo, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });

  const visit = async (entry: ReadEntry): Promise<void> => {
    const name = entry.path;
    if (name === MANIFEST_ENTRY && entry.type === "File") {
      if (manifestText !== undefined) problems.push("manifest.json appears twice");
      manifestText = (await collect(entry, MAX_MANIFEST_BYTES)).toString("utf8");
      return;
    }
    if (entry.type === "Directory" && name.startsWith(DATA_ENTRY_PREFIX)) return void entry.resume();
    const path = name.slice(DATA_ENTRY_PREFIX.length).replace(/\/+$/, "");
    if (!name.startsWith(DATA_ENTRY_PREFIX) || !isSafeRelativePath(path)) {
      problems.push(`unexpected entry ${JSON.stringify(name)} (not a file under data/)`);
      return void entry.resume();
    }
    if (entry.type !== "File") {
      problems.push(`${path}: a ${entry.type} entry, not a regular file`);
      return void entry.resume();
    }
    if (seen.has(path)) {
      problems.push(`${path} appears twice`);
      return void entry.resume();
    }
    const digest = await readEntry(entry, targetOf(extractTo, path));
    if (digest.writeError !== undefined) problems.push(`${path} could not be written: ${digest.writeError}`);
    seen.set(path, digest);
    bytes += digest.size;
  };

  try {
    await parse(file, visit);
  } catch (error) {
    problems.push(`the archive cannot be read to its end: ${(error as Error).message}`);
  }

  let manifest: BackupManifest | undefined;
  if (manifestText === undefined) {
    problems.push("manifest.json is missing (not an Almanac backup, or cut short)");
  } else {
    const parsed = parseManifest(manifestText);
    if (parsed.ok) manifest = parsed.manifest;
    else problems.push(parsed.problem);
  }
  if (manifest !== undefined) {
    const listed = new Set<string>();
    for (const expected of manifest.files) {
      listed.add(expected.path);
      const found = seen.get(expected.path);
      if (found === undefined) problems.push(`${expected.path} is listed in the manifest but missing`);
      else if (found.size !== expected.size)
        problems.push(`${expected.path}: ${found.size} bytes, the manifest says ${expected.size}`);
      else if (found.sha256 !== expected.sha256)
        problems.push(`${expected.path}: its SHA-256 does not match the manifest (the file was altered)`);
      const restored = targetOf(extractTo, expected.path);
      if (found !== undefined && restored !== undefined && found.writeError === undefined) {
        const time = new Date(expected.mtimeMs);
        await utimes(restored, time, time);
      }
    }
    for (const path of seen.keys())
      if (!listed.has(path)) problems.push(`${path} is in the archive but not in the manifest`);
  }
  return { ok: problems.length === 0, problems, manifest, files: seen.size, bytes };
}

const targetOf = (folder: string | undefined, path: string): string | undefined =>
  folder === undefined ? undefined : join(folder, ...path.split("/"));

/** Feeds the archive to tar's parser (which detects gzip), visiting entries one at a time, in order. */
async function parse(file: string, visit: (entry: ReadEntry) => Promise<void>): Promise<void> {
  const parser = new Parser({ strict: true });
  let visiting: Promise<void> = Promise.resolve();
  let failure: unknown;
  parser.on("entry", (entry: ReadEntry) => {
    visiting = visiting.then(() =>
      visit(entry).catch((error: unknown) => {
        failure ??= error;
        entry.resume();
      }),
    );
  });
  const input = createReadStream(file);
  await new Promise<void>((resolve, reject) => {
    input.on("error", reject);
    parser.on("error", reject);
    parser.on("end", resolve);
    parser.on("close", resolve);
    input.pipe(parser as unknown as NodeJS.WritableStream);
  });
  await visiting;
  if (failure !== undefined) throw failure;
}

async function collect(entry: ReadEntry, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of entry) {
    size += chunk.length;
    if (size > limit) throw new Error(`${entry.path} is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Reads an entry's data to its end, hashing it, and writes it to `target` when given (never over an existing
 * file). A write that fails is reported, and the rest of the entry is still read, so the archive goes on.
 */
async function readEntry(
  entry: ReadEntry,
  target: string | undefined,
): Promise<{ size: number; sha256: string; writeError?: string }> {
  const hash = createHash("sha256");
  let size = 0;
  let handle: FileHandle | undefined;
  let writeError: string | undefined;
  const failed = (error: unknown) => {
    writeError ??= (error as Error).message;
    const open = handle;
    handle = undefined;
    return open?.close().catch(() => {});
  };
  if (target !== undefined) {
    try {
      await mkdir(dirname(target), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
      handle = await open(target, "wx", PRIVATE_FILE_MODE);
    } catch (error) {
      await failed(error);
    }
  }
  for await (const chunk of entry) {
    hash.update(chunk);
    size += chunk.length;
    if (handle !== undefined) await handle.writeFile(chunk).catch(failed);
  }
  await handle?.close().catch(failed);
  return { size, sha256: hash.digest("hex"), ...(writeError === undefined ? {} : { writeError }) };
}
