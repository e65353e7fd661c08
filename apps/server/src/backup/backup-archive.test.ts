import { mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync, gzipSync } from "node:zlib";
import Database from "better-sqlite3";
import { Header, Pack, ReadEntry } from "tar";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkArchive } from "./archive-reader.js";
import { createBackupArchive } from "./archive-writer.js";
import { BACKUP_FORMAT_VERSION, isSafeRelativePath, parseManifest } from "./backup-manifest.js";
import { restoreBackup } from "./restore-backup.js";

let root: string;
let home: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "almanac-backup-"));
  home = join(root, "data");
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const FACT = "- The boat is called Zephyr-12.\n";
const OLD_TIME = new Date("2025-03-04T05:06:07.000Z");

/** A small data directory with one file of each kind the server keeps. */
async function writeDataDirectory(): Promise<void> {
  const files: Record<string, string> = {
    "admin-token": "secret-token\n",
    "workspace/MEMORY.md": `# Memory\n${FACT}`,
    "workspace/memory/2025-03-04.md": "# 2025-03-04\n- Talked about the boat.\n",
    "sessions/api%3Adefault%3Aapi%3Acli.json": '{"key":"api:default:api:cli"}\n',
    "sessions/api%3Adefault%3Aapi%3Acli.jsonl": '{"line":1}\n{"line":2}\n',
    "sessions/archive/old-2025.jsonl": '{"line":0}\n',
    "state/tasks/journal.jsonl": '{"task":1}\n',
    "state/approvals.json": "{}\n",
    "state/backups/memory-files/MEMORY.md.1": "# Memory\n",
  };
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(home, path, ".."), { recursive: true });
    await writeFile(join(home, path), content);
  }
  await utimes(join(home, "workspace/MEMORY.md"), OLD_TIME, OLD_TIME);
}

async function archive(): Promise<string> {
  const file = join(root, "backup.tar.gz");
  await createBackupArchive({ home, file, almanacVersion: "9.9.9", createdBy: "cli" });
  return file;
}

/** Rewrites the archive's uncompressed tar bytes (same length), as a person tampering with it would. */
async function tamper(file: string, from: string, to: string): Promise<void> {
  const tar = gunzipSync(await readFile(file));
  const at = tar.indexOf(from);
  expect(at).toBeGreaterThan(0);
  Buffer.from(to).copy(tar, at);
  await writeFile(file, gzipSync(tar));
}

describe("backup archives", () => {
  it("verifies an archive it made and restores it byte for byte, private, with the archived times", async () => {
    await writeDataDirectory();
    const file = await archive();
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const check = await checkArchive(file);
    expect(check.problems).toEqual([]);
    expect(check.ok).toBe(true);
    expect(check.files).toBe(9);
    expect(check.manifest).toMatchObject({ almanacVersion: "9.9.9", createdBy: "cli" });

    const target = join(root, "restored");
    const outcome = await restoreBackup(file, target);
    expect(outcome.restored).toBe(true);
    expect(await readFile(join(target, "workspace/MEMORY.md"), "utf8")).toBe(`# Memory\n${FACT}`);
    expect(await readFile(join(target, "admin-token"), "utf8")).toBe("secret-token\n");
    const memory = await stat(join(target, "workspace/MEMORY.md"));
    expect(memory.mode & 0o777).toBe(0o600);
    expect(memory.mtimeMs).toBe(OLD_TIME.getTime());
    expect((await stat(join(target, "sessions/archive"))).mode & 0o777).toBe(0o700);
    expect((await stat(target)).mode & 0o777).toBe(0o700);
    // The restore's own lock is gone again.
    expect(await readdir(join(target, "state"))).not.toContain("almanac.lock");
  });

  it("fails verification when a file was altered inside the archive, naming the file", async () => {
    await writeDataDirectory();
    const file = await archive();
    await tamper(file, "Zephyr-12", "Zephyr-13");
    const check = await checkArchive(file);
    expect(check.ok).toBe(false);
    expect(check.problems).toEqual([
      "workspace/MEMORY.md: its SHA-256 does not match the manifest (the file was altered)",
    ]);
  });

  it("fails verification when the manifest was altered, or the archive is cut short or not one", async () => {
    await writeDataDirectory();
    const file = await archive();
    await tamper(file, '"size": 13', '"size": 14');
    expect((await checkArchive(file)).problems).toEqual(["admin-token: 13 bytes, the manifest says 14"]);

    const whole = await readFile(file);
    await writeFile(file, whole.subarray(0, Math.floor(whole.length / 2)));
    const cut = await checkArchive(file);
    expect(cut.ok).toBe(false);
    expect(cut.problems).toContain("manifest.json is missing (not an Almanac backup, or cut short)");

    await writeFile(file, "this is not a tar.gz file at all\n".repeat(40));
    expect((await checkArchive(file)).ok).toBe(false);
  });

  it("refuses to restore into a directory with anything in it, and writes nothing", async () => {
    await writeDataDirectory();
    const file = await archive();
    const target = join(root, "busy");
    await mkdir(target);
    await writeFile(join(target, "notes.txt"), "mine\n");
    await expect(restoreBackup(file, target)).rejects.toMatchObject({ code: "backup.target_not_empty" });
    expect(await readdir(target)).toEqual(["notes.txt"]);
  });

  it("restores nothing from an archive that fails its check", async () => {
    await writeDataDirectory();
    const file = await archive();
    await tamper(file, "Zephyr-12", "Zephyr-13");
    const target = join(root, "restored");
    const outcome = await restoreBackup(file, target);
    expect(outcome).toMatchObject({ restored: false, failedAt: "verify" });
    await expect(stat(target)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("leaves out the lock, temp files, earlier archives and the index's WAL, and says why", async () => {
    await writeDataDirectory();
    await mkdir(join(home, "backups"), { recursive: true });
    await writeFile(join(home, "backups/almanac-backup-old.tar.gz"), "old");
    await writeFile(join(home, "state/almanac.lock"), '{"pid":1}\n');
    await writeFile(join(home, "workspace/.MEMORY.md.0123456789abcdef.tmp"), "half");
    await writeFile(join(home, "state/index.sqlite-wal"), "wal");
    const file = await archive();
    const { manifest } = await checkArchive(file);
    const paths = manifest?.files.map((entry) => entry.path) ?? [];
    expect(paths).not.toContain("state/almanac.lock");
    expect(paths.some((path) => path.startsWith("backups/") || path.endsWith(".tmp"))).toBe(false);
    expect(manifest?.excluded.map((entry) => entry.path).sort()).toEqual([
      "backups",
      "state/almanac.lock",
      "state/index.sqlite-wal",
      "workspace/.MEMORY.md.0123456789abcdef.tmp",
    ]);
    expect(manifest?.excluded.every((entry) => entry.reason.length > 10)).toBe(true);
  });

  it("archives a JSON-lines file up to its last whole line (an append under way is left out)", async () => {
    await writeDataDirectory();
    await writeFile(join(home, "sessions/api%3Adefault%3Aapi%3Acli.jsonl"), '{"line":1}\n{"line":2}\n{"li');
    // Large files are streamed rather than read whole: the same cut, found from the end.
    const longLines = `${'{"line":"x"}\n'.repeat(200_000)}`;
    await writeFile(join(home, "state/tasks/journal.jsonl"), `${longLines}${"y".repeat(70_000)}`);
    const large = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
    await writeFile(join(home, "workspace/scan.bin"), large);
    const file = await archive();
    const target = join(root, "restored");
    expect((await restoreBackup(file, target)).restored).toBe(true);
    expect(await readFile(join(target, "sessions/api%3Adefault%3Aapi%3Acli.jsonl"), "utf8")).toBe(
      '{"line":1}\n{"line":2}\n',
    );
    expect(await readFile(join(target, "state/tasks/journal.jsonl"), "utf8")).toBe(longLines);
    expect((await readFile(join(target, "workspace/scan.bin"))).equals(large)).toBe(true);
  });

  it("takes snapshots before transcripts, sessions before state, state before the workspace", async () => {
    await writeDataDirectory();
    const { manifest } = await checkArchive(await archive());
    expect(manifest?.files.map((entry) => entry.path)).toEqual([
      "sessions/api%3Adefault%3Aapi%3Acli.json",
      "sessions/api%3Adefault%3Aapi%3Acli.jsonl",
      "sessions/archive/old-2025.jsonl",
      "state/approvals.json",
      "state/tasks/journal.jsonl",
      "workspace/MEMORY.md",
      "workspace/memory/2025-03-04.md",
      "state/backups/memory-files/MEMORY.md.1",
      "admin-token",
    ]);
  });

  it("copies the SQLite index with what is still only in its WAL, while a connection holds it open", async () => {
    await writeDataDirectory();
    const index = new Database(join(home, "state/index.sqlite"));
    try {
      index.pragma("journal_mode = WAL");
      index.pragma("wal_autocheckpoint = 0");
      index.exec("CREATE TABLE chunks (text TEXT)");
      index.prepare("INSERT INTO chunks VALUES (?)").run("Zephyr-12");
      const file = await archive();
      const target = join(root, "restored");
      expect((await restoreBackup(file, target)).restored).toBe(true);
      expect(await readdir(join(target, "state"))).not.toContain("index.sqlite-wal");
      const restored = new Database(join(target, "state/index.sqlite"), { readonly: true });
      expect(restored.prepare("SELECT text FROM chunks").pluck().all()).toEqual(["Zephyr-12"]);
      restored.close();
    } finally {
      index.close();
    }
  });

  it("refuses an entry that would leave the data directory, and writes nothing", async () => {
    const file = join(root, "evil.tar.gz");
    const manifest = JSON.stringify({
      format: "almanac-backup",
      formatVersion: 1,
      almanacVersion: "9.9.9",
      createdAt: new Date().toISOString(),
      createdBy: "cli",
      files: [],
      excluded: [],
    });
    const pack = new Pack({ portable: true, gzip: true });
    const writing = readStreamToBuffer(pack);
    for (const [path, content] of [
      ["data/../../evil.txt", "gotcha\n"],
      ["manifest.json", manifest],
    ] as const) {
      const entry = new ReadEntry(
        new Header({ path, mode: 0o600, size: Buffer.byteLength(content), type: "File" }),
      );
      pack.add(entry);
      entry.end(Buffer.from(content));
    }
    pack.end();
    await writeFile(file, await writing);
    const target = join(root, "restored");
    const outcome = await restoreBackup(file, target);
    expect(outcome).toMatchObject({ restored: false, failedAt: "verify" });
    expect(outcome.check.problems).toEqual([
      'unexpected entry "data/../../evil.txt" (not a file under data/)',
    ]);
    await expect(stat(join(root, "evil.txt"))).rejects.toMatchObject({ code: "ENOENT" });
    await expect(stat(target)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

async function readStreamToBuffer(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe("the manifest", () => {
  it("names a newer format version instead of guessing at it", () => {
    const parsed = parseManifest(
      JSON.stringify({ format: "almanac-backup", formatVersion: BACKUP_FORMAT_VERSION + 1 }),
    );
    expect(parsed).toEqual({ ok: false, problem: expect.stringContaining("use a newer Almanac") });
  });

  it("rejects paths that leave the folder they are joined to", () => {
    for (const path of ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "C:/x", "a\\b", ""])
      expect(isSafeRelativePath(path), path).toBe(false);
    expect(isSafeRelativePath("sessions/api%3Adefault%3Aapi%3Acli.jsonl")).toBe(true);
  });
});
