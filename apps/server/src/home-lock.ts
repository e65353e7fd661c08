import { mkdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { UserError } from "@almanac/core";
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from "@almanac/durable-write";

/** How often the holder touches the lock, and after how long an untouched lock counts as abandoned. */
const HEARTBEAT_MS = 10_000;
const STALE_AFTER_MS = 35_000;

/** A held lock on a data directory. */
export interface HomeLock {
  release(): Promise<void>;
}

interface LockOwner {
  readonly pid: number;
  readonly hostname: string;
  readonly startedAt: number;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function currentOwner(
  file: string,
): Promise<{ owner: LockOwner | undefined; ageMs: number } | undefined> {
  try {
    const [text, info] = await Promise.all([readFile(file, "utf8"), stat(file)]);
    let owner: LockOwner | undefined;
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null && "pid" in parsed && "hostname" in parsed) {
        const { pid, hostname: host, startedAt } = parsed as Record<string, unknown>;
        if (typeof pid === "number" && typeof host === "string")
          owner = { pid, hostname: host, startedAt: Number(startedAt) };
      }
    } catch {
      owner = undefined; // a torn lock file: treated as abandoned below
    }
    return { owner, ageMs: Date.now() - info.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Makes sure only one Almanac process uses a data directory: two writers would interleave transcripts and
 * race on the daily logs. The lock names its owner and is touched every 10 s; it is taken over when its
 * process is gone (same host) or it has not been touched for 35 s (another host or container).
 */
export async function acquireHomeLock(home: string): Promise<HomeLock> {
  const dir = join(home, "state");
  const file = join(dir, "almanac.lock");
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  const existing = await currentOwner(file);
  if (existing?.owner) {
    const { owner, ageMs } = existing;
    const sameHost = owner.hostname === hostname();
    const abandoned = sameHost ? owner.pid === process.pid || !isAlive(owner.pid) : ageMs > STALE_AFTER_MS;
    if (!abandoned) {
      throw new UserError(
        "home.locked",
        `Another Almanac (pid ${owner.pid} on ${owner.hostname}, started ${new Date(owner.startedAt).toISOString()}) is using ${home}. Stop it, or give this one its own ALMANAC_HOME.`,
      );
    }
  }
  const me: LockOwner = { pid: process.pid, hostname: hostname(), startedAt: Date.now() };
  await writeFile(file, `${JSON.stringify(me)}\n`, { mode: PRIVATE_FILE_MODE });
  const heartbeat = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => {});
  }, HEARTBEAT_MS);
  heartbeat.unref();
  return {
    async release() {
      clearInterval(heartbeat);
      const current = await currentOwner(file).catch(() => undefined);
      if (current?.owner?.pid === me.pid && current.owner.startedAt === me.startedAt)
        await rm(file, { force: true });
    },
  };
}
