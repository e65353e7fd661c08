import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readFile, stat, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { UserError } from "@almanac/core";
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from "@almanac/durable-write";
import { z } from "zod";
import type { ArchiveCheck } from "../backup/archive-reader.js";
import { ConfigError, loadConfig } from "../config/load-config.js";
import { type AdminClient, CliError, createAdminClient, resolveTarget } from "./admin-client.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";
import { formatTable } from "./sessions-command.js";

/** Options of the backup commands. */
export interface BackupOptions {
  /** `--out <file>` of `backup create`: also download the archive there. */
  readonly out?: string;
}

const USAGE =
  "usage: almanac backup create [--out FILE] | backup list | backup verify FILE | backup restore FILE --home DIR";

const createdBackup = z.looseObject({
  name: z.string(),
  path: z.string(),
  size: z.number(),
  sha256: z.string(),
  createdAt: z.string(),
  files: z.number(),
  bytes: z.number(),
  excluded: z.array(z.object({ path: z.string(), reason: z.string() })),
  durationMs: z.number(),
});
type CreatedBackup = z.infer<typeof createdBackup>;

const backupList = z.object({
  backups: z.array(z.looseObject({ name: z.string(), size: z.number(), createdAt: z.string() })),
});

/** `almanac backup create|list|verify|restore` (docs/backup.md). */
export async function backupCommand(
  context: CliContext,
  args: readonly string[],
  options: BackupOptions = {},
): Promise<number> {
  const [action, file, ...rest] = args;
  if (rest.length > 0 || (options.out !== undefined && action !== "create")) return usage(context);
  try {
    if (action === "create" && file === undefined) return await create(context, options.out);
    if (action === "list" && file === undefined) return await list(context);
    if (action === "verify" && file !== undefined) return await verify(context, file);
    if (action === "restore" && file !== undefined) return await restore(context, file);
  } catch (error) {
    // What the backup itself refuses (a directory not empty, a file that changed, a name taken) is one line.
    if (error instanceof UserError && !(error instanceof CliError))
      throw new CliError(error.code, error.message, EXIT.failure, { cause: error });
    throw error;
  }
  return usage(context);
}

function usage(context: CliContext): number {
  writeLine(context.io.stderr, USAGE);
  return EXIT.usage;
}

/**
 * Asks the running server for an archive (it knows when its files are between writes) and, with `--out`,
 * downloads it. When no server answers and `--url` was not given, archives the data directory itself, holding
 * the directory's lock so that no server starts meanwhile.
 */
async function create(context: CliContext, out: string | undefined): Promise<number> {
  const outFile = out === undefined ? undefined : resolve(context.io.cwd, out);
  if (outFile !== undefined && (await exists(outFile)))
    throw new CliError("backup.exists", `${outFile} exists already; choose another file.`, EXIT.failure);
  const client = createAdminClient(resolveTarget(context), context.fetch);
  let made: CreatedBackup;
  try {
    const parsed = createdBackup.safeParse(await client.json("POST", "/api/backups"));
    if (!parsed.success)
      throw new CliError(
        "cli.malformed_response",
        "POST /api/backups: unexpected answer shape",
        EXIT.failure,
      );
    made = parsed.data;
  } catch (error) {
    if (
      !(error instanceof CliError) ||
      error.exitCode !== EXIT.notRunning ||
      context.options.url !== undefined
    )
      throw error;
    return createWithoutServer(context, outFile, error);
  }
  if (outFile !== undefined) await download(client, made, outFile);
  const { stdout } = context.io;
  if (context.options.json) {
    writeLine(
      stdout,
      JSON.stringify({ ...made, ...(outFile === undefined ? {} : { out: outFile }) }, null, 2),
    );
    return EXIT.ok;
  }
  writeLine(stdout, `backup: ${made.path}${outFile === undefined ? "" : ` (on the server)`}`);
  if (outFile !== undefined) writeLine(stdout, `downloaded to ${outFile} (SHA-256 checked)`);
  writeLine(stdout, describe(made));
  return EXIT.ok;
}

async function createWithoutServer(
  context: CliContext,
  outFile: string | undefined,
  unreachable: CliError,
): Promise<number> {
  const home = homeOf(context);
  if (!(await stat(home).catch(() => undefined))?.isDirectory())
    throw new CliError(
      unreachable.code,
      `${unreachable.message}, and there is no data directory at ${home} to archive`,
      EXIT.notRunning,
    );
  const [{ acquireHomeLock }, { createBackupArchive }, { archiveNameAt }] = await Promise.all([
    import("../home-lock.js"),
    import("../backup/archive-writer.js"),
    import("../backup/backup-store.js"),
  ]);
  let lock: Awaited<ReturnType<typeof acquireHomeLock>>;
  try {
    lock = await acquireHomeLock(home);
  } catch (error) {
    // Another process holds the directory but did not answer at the configured address: never archive
    // files that are being written without the server's help.
    if (error instanceof UserError && error.code === "home.locked")
      throw new CliError(
        "home.locked",
        `${unreachable.message}, but another process holds ${home} (pass --url to reach it): ${error.message}`,
        EXIT.notRunning,
        { cause: error },
      );
    throw error;
  }
  let summary: Awaited<ReturnType<typeof createBackupArchive>>;
  try {
    let file = outFile;
    if (file === undefined) {
      await mkdir(join(home, "backups"), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
      file = join(home, "backups", archiveNameAt(Date.now()));
    }
    summary = await createBackupArchive({
      home,
      file,
      almanacVersion: await almanacVersion(),
      createdBy: "cli",
    });
  } finally {
    await lock.release();
  }
  const { stdout, stderr } = context.io;
  if (context.options.json) {
    const { file, ...rest } = summary;
    writeLine(stdout, JSON.stringify({ name: basename(file), path: file, ...rest }, null, 2));
    return EXIT.ok;
  }
  writeLine(stderr, `no server is running at ${resolveTarget(context).baseUrl}: archived ${home} directly`);
  writeLine(stdout, `backup: ${summary.file}`);
  writeLine(stdout, describe(summary));
  return EXIT.ok;
}

/** Downloads the server's archive to `outFile` (0600; never over an existing file), checking its SHA-256. */
async function download(client: AdminClient, made: CreatedBackup, outFile: string): Promise<void> {
  const response = await client.raw("GET", `/api/backups/${encodeURIComponent(made.name)}`);
  const temp = join(dirname(outFile), `.${basename(outFile)}.${randomBytes(8).toString("hex")}.partial`);
  const handle = await open(temp, "wx", PRIVATE_FILE_MODE);
  const hash = createHash("sha256");
  try {
    try {
      const reader = response.body?.getReader();
      for (let read = await reader?.read(); read !== undefined && !read.done; read = await reader?.read()) {
        hash.update(read.value);
        await handle.writeFile(read.value);
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    const sha256 = hash.digest("hex");
    if (sha256 !== made.sha256)
      throw new CliError(
        "backup.invalid",
        `the download of ${made.name} does not match the server's SHA-256; it stays on the server at ${made.path}`,
        EXIT.failure,
      );
    const { publishFile } = await import("../backup/archive-writer.js");
    await publishFile(temp, outFile);
  } finally {
    await unlink(temp).catch(() => {});
  }
}

async function list(context: CliContext): Promise<number> {
  const client = createAdminClient(resolveTarget(context), context.fetch);
  const parsed = backupList.safeParse(await client.json("GET", "/api/backups"));
  if (!parsed.success)
    throw new CliError("cli.malformed_response", "GET /api/backups: unexpected answer shape", EXIT.failure);
  const { backups } = parsed.data;
  if (context.options.json) {
    writeLine(context.io.stdout, JSON.stringify({ backups }, null, 2));
    return EXIT.ok;
  }
  if (backups.length === 0) {
    writeLine(context.io.stdout, "no backups yet (make one with `almanac backup create`)");
    return EXIT.ok;
  }
  const rows = backups.map((backup) => [
    backup.name,
    megabytes(backup.size),
    backup.createdAt.replace("T", " ").slice(0, 16),
  ]);
  writeLine(context.io.stdout, formatTable(["NAME", "SIZE", "CREATED (UTC)"], rows));
  return EXIT.ok;
}

async function verify(context: CliContext, file: string): Promise<number> {
  const path = await archiveFile(context, file);
  const { checkArchive } = await import("../backup/archive-reader.js");
  const check = await checkArchive(path);
  report(context, path, check);
  return check.ok ? EXIT.ok : EXIT.failure;
}

async function restore(context: CliContext, file: string): Promise<number> {
  const path = await archiveFile(context, file);
  const home = homeOf(context);
  const { restoreBackup } = await import("../backup/restore-backup.js");
  const outcome = await restoreBackup(path, home);
  const { check } = outcome;
  if (!outcome.restored) {
    report(context, path, check);
    writeLine(
      context.io.stderr,
      outcome.failedAt === "verify"
        ? `nothing was restored into ${home}`
        : `the restore into ${home} failed and what it wrote was removed`,
    );
    return EXIT.failure;
  }
  if (context.options.json) {
    writeLine(context.io.stdout, JSON.stringify({ restored: true, home, ...summaryOf(check) }, null, 2));
    return EXIT.ok;
  }
  writeLine(
    context.io.stdout,
    `restored ${fileCount(check.files)} (${megabytes(check.bytes)}) into ${home}; start the server with ALMANAC_HOME=${home}`,
  );
  return EXIT.ok;
}

/** Prints a check: one line when it passed, every problem (on stderr) when it did not. */
function report(context: CliContext, path: string, check: ArchiveCheck): void {
  const { stdout, stderr } = context.io;
  if (context.options.json) {
    writeLine(
      stdout,
      JSON.stringify({ file: path, ok: check.ok, problems: check.problems, ...summaryOf(check) }, null, 2),
    );
    return;
  }
  if (!check.ok) {
    writeLine(
      stderr,
      `FAILED ${path}: ${check.problems.length} problem${check.problems.length === 1 ? "" : "s"}`,
    );
    for (const problem of check.problems.slice(0, 20)) writeLine(stderr, `  ${problem}`);
    if (check.problems.length > 20) writeLine(stderr, `  … and ${check.problems.length - 20} more`);
    return;
  }
  const { manifest } = check;
  writeLine(
    stdout,
    `ok ${path}: ${fileCount(check.files)} (${megabytes(check.bytes)}), made ${manifest?.createdAt ?? "?"} by Almanac ${manifest?.almanacVersion ?? "?"} (${manifest?.createdBy === "cli" ? "no server running" : "by the running server"})`,
  );
}

function summaryOf(check: ArchiveCheck) {
  const { manifest } = check;
  return {
    files: check.files,
    bytes: check.bytes,
    ...(manifest === undefined
      ? {}
      : {
          createdAt: manifest.createdAt,
          almanacVersion: manifest.almanacVersion,
          createdBy: manifest.createdBy,
          excluded: manifest.excluded,
        }),
  };
}

function describe(summary: {
  files: number;
  bytes: number;
  size: number;
  durationMs: number;
  excluded: readonly { path: string }[];
}): string {
  const left =
    summary.excluded.length === 0
      ? ""
      : `; left out: ${summary.excluded.map((entry) => entry.path).join(", ")}`;
  return `${fileCount(summary.files)}, ${megabytes(summary.bytes)} → ${megabytes(summary.size)} compressed, in ${(summary.durationMs / 1000).toFixed(1)} s${left}`;
}

function fileCount(files: number): string {
  return `${files} file${files === 1 ? "" : "s"}`;
}

function megabytes(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

/** The archive named on the command line, which must be a file. */
async function archiveFile(context: CliContext, file: string): Promise<string> {
  const path = resolve(context.io.cwd, file);
  if (!(await stat(path).catch(() => undefined))?.isFile())
    throw new CliError("backup.invalid", `no archive at ${path}`, EXIT.failure);
  return path;
}

/** The data directory: `--home`, else the configuration's (ALMANAC_HOME, the config file, `./data`). */
function homeOf(context: CliContext): string {
  if (context.options.home !== undefined) return resolve(context.io.cwd, context.options.home);
  try {
    return loadConfig({ env: context.env, cwd: context.io.cwd }).config.home;
  } catch (error) {
    if (error instanceof ConfigError)
      throw new CliError(error.code, error.message, EXIT.config, { cause: error });
    throw error;
  }
}

/** This Almanac's version (apps/server/package.json), recorded in the manifest of an archive made here. */
async function almanacVersion(): Promise<string> {
  const parsed: unknown = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
  const version = (parsed as { version?: unknown } | null)?.version;
  return typeof version === "string" ? version : "0.0.0";
}
