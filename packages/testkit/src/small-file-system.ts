import { execFileSync } from "node:child_process";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A tmpfs of a few megabytes to fill on purpose, or why it could not be mounted (mounting needs root). */
export interface SmallFileSystem {
  readonly path: string;
  /** Undefined when mounted; otherwise the first line of mount's error (tests skip and say it). */
  readonly problem: string | undefined;
  /** Unmounts (when mounted) and removes the mount point. */
  dispose(): Promise<void>;
}

/** Mounts a tmpfs of `size` (mount's syntax, e.g. "4m") on a new temporary directory. */
export async function mountSmallFileSystem(
  size: string,
  prefix = "almanac-small-fs-",
): Promise<SmallFileSystem> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  let problem: string | undefined;
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", path], { stdio: "pipe" });
  } catch (error) {
    problem = error instanceof Error ? error.message.split("\n")[0] : String(error);
  }
  return {
    path,
    problem,
    async dispose() {
      if (problem === undefined) execFileSync("umount", [path], { stdio: "pipe" });
      await rm(path, { recursive: true, force: true });
    },
  };
}

/** Writes `file` until the file system refuses; resolves when it did so with ENOSPC, rejects otherwise. */
export async function fillDisk(file: string): Promise<void> {
  const handle = await open(file, "w");
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) await handle.write(block);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
  } finally {
    await handle.close();
  }
}
