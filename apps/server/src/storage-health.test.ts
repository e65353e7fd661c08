import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createStorageHealth, StorageError, storageFailureOf } from "./storage-health.js";

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "almanac-storage-"));
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

const errno = (code: string) => Object.assign(new Error(`${code}: failed, write`), { code });

describe("storageFailureOf", () => {
  it("finds a full or read-only disk anywhere in the cause chain, and nothing else", () => {
    expect(storageFailureOf(errno("ENOSPC"))).toEqual({ errno: "ENOSPC", code: "storage.full" });
    expect(storageFailureOf(errno("EDQUOT"))).toEqual({ errno: "EDQUOT", code: "storage.full" });
    expect(storageFailureOf(new Error("wrapped", { cause: errno("EROFS") }))).toEqual({
      errno: "EROFS",
      code: "storage.read_only",
    });
    expect(storageFailureOf(errno("EIO"))).toBeUndefined();
    expect(storageFailureOf(errno("ENOENT"))).toBeUndefined();
    expect(storageFailureOf("ENOSPC")).toBeUndefined();
  });
});

describe("createStorageHealth", () => {
  it("turns a full disk into storage.full naming the data directory, and clears it on the next good write", async () => {
    let now = Date.UTC(2025, 0, 2, 3, 4, 5);
    const health = createStorageHealth({ dataDir, clock: () => now });
    const thrown = await health
      .guard(async () => {
        throw errno("ENOSPC");
      })
      .catch((error: unknown) => error);
    expect(thrown).toBeInstanceOf(StorageError);
    expect(thrown).toMatchObject({ code: "storage.full", errno: "ENOSPC", dataDir, isRetryable: true });
    expect((thrown as Error).message).toContain(dataDir);
    now += 5_000;
    expect(health.status()).toEqual({
      ok: false,
      code: "storage.full",
      errno: "ENOSPC",
      dataDir,
      since: "2025-01-02T03:04:05.000Z",
      hint: expect.stringContaining(`Free space on the file system that holds ${dataDir}`),
    });
    await expect(health.guard(async () => "written")).resolves.toBe("written");
    expect(health.status()).toEqual({ ok: true, dataDir });
  });

  it("passes other failures through untouched and does not turn red for them", async () => {
    const health = createStorageHealth({ dataDir });
    const other = errno("EACCES");
    await expect(health.guard(() => Promise.reject(other))).rejects.toBe(other);
    expect(health.status().ok).toBe(true);
  });

  it("check() probes at most once per interval and clears the failure when the probe write works", async () => {
    let now = 0;
    const probeDir = join(dataDir, "state");
    const health = createStorageHealth({ dataDir, probeDir, clock: () => now, probeEveryMs: 1_000 });
    health.classify(errno("ENOSPC"));
    // The probe directory does not exist yet: the probe fails, the failure stands.
    expect((await health.check()).ok).toBe(false);
    await mkdir(probeDir);
    now += 999;
    expect((await health.check()).ok).toBe(false); // too soon for another probe
    now += 1;
    expect(await health.check()).toEqual({ ok: true, dataDir });
  });
});
