import { spawn } from "node:child_process";
import { fstatSync, statSync, watch } from "node:fs";
import {
  type FileHandle,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  rm,
  stat,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { formatSessionKey, sessionKeyToFileStem } from "@almanac/core";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  fsyncDirectory,
  isDurableWriteTempFile,
  makeDirectoriesBelow,
  makeDirectoryIn,
  PRIVATE_DIRECTORY_MODE,
  removeStaleTempFiles,
  stageFileDurably,
  writeFileDurably,
} from "./durable-write.js";

const childScript = fileURLToPath(new URL("../test/durable-write-child.ts", import.meta.url));

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-durable-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("writeFileDurably", () => {
  it("creates or replaces a file and leaves no temp file behind", async () => {
    const path = join(dir, "state.json");
    await writeFileDurably(path, "one");
    await writeFileDurably(path, "two");
    expect(await readFile(path, "utf8")).toBe("two");
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("writes the data whole on either side of the size it writes blocking (64 KiB), bytes and UTF-8 alike", async () => {
    const path = join(dir, "data.bin");
    const limit = 64 * 1024;
    for (const size of [0, 1, limit - 1, limit, limit + 1, 3 * limit + 7]) {
      const bytes = Uint8Array.from({ length: size }, (_, index) => (index * 31) % 251);
      await writeFileDurably(path, bytes);
      expect(Buffer.compare(await readFile(path), Buffer.from(bytes))).toBe(0);
      // Three bytes a character: the UTF-8 crosses the limit where the string's length does not.
      const text = "€".repeat(Math.ceil(size / 3));
      await writeFileDurably(path, text);
      expect(await readFile(path, "utf8")).toBe(text);
    }
    expect(await readdir(dir)).toEqual(["data.bin"]);
  });

  it("keeps the old content and removes its temp file when the final rename fails", async () => {
    const path = join(dir, "state.json");
    await mkdir(join(path, "occupied"), { recursive: true });
    await expect(writeFileDurably(path, "new")).rejects.toMatchObject({ code: expect.any(String) });
    expect(await readdir(dir)).toEqual(["state.json"]);
    expect(await readdir(path)).toEqual(["occupied"]);
  });

  it("throws the system error itself when the directory is missing, so callers can map its errno", async () => {
    await expect(writeFileDurably(join(dir, "missing", "file.md"), "x")).rejects.toMatchObject({
      code: "ENOENT",
      syscall: "open",
    });
  });

  it("keeps the permission bits of the file it replaces, and applies an explicit mode exactly", async () => {
    const kept = join(dir, "kept.md");
    await writeFile(kept, "old", { mode: 0o640 });
    await writeFileDurably(kept, "new");
    expect((await stat(kept)).mode & 0o777).toBe(0o640);

    const secret = join(dir, "admin-token");
    await writeFileDurably(secret, "token", { mode: 0o600 });
    expect((await stat(secret)).mode & 0o777).toBe(0o600);

    // Bits the usual umask (022) takes off at creation are put back.
    const shared = join(dir, "shared.md");
    await writeFileDurably(shared, "x", { mode: 0o666 });
    expect((await stat(shared)).mode & 0o777).toBe(0o666);
  });

  it("leaves the old content whole, and no temp file, when a staged write is discarded", async () => {
    const path = join(dir, "state.json");
    await writeFileDurably(path, "old");
    const staged = await stageFileDurably(path, "new");
    expect((await readdir(dir)).filter(isDurableWriteTempFile)).toHaveLength(1);
    await staged.discard();
    expect(await readFile(path, "utf8")).toBe("old");
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("leaves the old or the new content, never a mix, when the process is killed mid-write", async () => {
    const path = join(dir, "big.txt");
    const size = 8 * 1024 * 1024;
    const child = spawn(process.execPath, ["--import", "tsx", childScript, path, String(size)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on("exit", (_, signal) => resolve(signal)),
    );
    // Once the second write has started, kill at the first change it makes in the directory: a plain
    // `writeFile` is caught with the file truncated, a durable write with its temp file half written.
    let armed = false;
    const watcher = watch(dir, () => {
      if (armed) child.kill("SIGKILL");
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("writing 2\n")) armed = true;
    });
    const signal = await exited;
    watcher.close();
    expect(signal, stderr).toBe("SIGKILL");

    const content = await readFile(path);
    expect(content.length).toBe(size);
    const first = content[0];
    expect(first === 0x61 || first === 0x62).toBe(true);
    expect(content.every((byte) => byte === first)).toBe(true);
    await removeStaleTempFiles(dir);
    expect(await readdir(dir)).toEqual(["big.txt"]);
  });
});

describe("fsyncDirectory", () => {
  /** Counts the fsyncs of `directory` (by device and inode), made through the FileHandles the module opens. */
  async function countDirectoryFsyncs(directory: string): Promise<() => number> {
    const { dev, ino } = statSync(directory);
    // Every FileHandle shares one prototype: spy on its `sync`.
    const probe = await open(directory, "r");
    const prototype = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const original = prototype.sync;
    let count = 0;
    vi.spyOn(prototype, "sync").mockImplementation(async function (this: FileHandle) {
      const stats = fstatSync(this.fd);
      if (stats.dev === dev && stats.ino === ino) count += 1;
      return original.call(this);
    });
    return () => count;
  }

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("commits the calls made while the directory's fsync runs together, in one more fsync after it", async () => {
    const fsyncs = await countDirectoryFsyncs(dir);
    const first = fsyncDirectory(dir);
    // Made while the first runs: that one may have started before their changes, so one more covers them all.
    const meanwhile = Array.from({ length: 20 }, () => fsyncDirectory(dir));
    await Promise.all([first, ...meanwhile]);
    expect(fsyncs()).toBe(2);
  });

  it("fsyncs again for every call made after the previous fsync ended", async () => {
    const fsyncs = await countDirectoryFsyncs(dir);
    for (let call = 0; call < 3; call += 1) await fsyncDirectory(dir);
    expect(fsyncs()).toBe(3);
  });

  it("gives every caller of a group the directory's error", async () => {
    const missing = join(dir, "missing");
    const calls = [fsyncDirectory(missing), fsyncDirectory(missing), fsyncDirectory(missing)];
    for (const call of calls) await expect(call).rejects.toMatchObject({ code: "ENOENT" });
    // And the next call starts over.
    await mkdir(missing);
    await expect(fsyncDirectory(missing)).resolves.toBeUndefined();
  });
});

describe("makeDirectoryIn", () => {
  it("makes one private directory inside an existing one, says whether it made it, and never makes its parent", async () => {
    const made = join(dir, "made");
    expect(await makeDirectoryIn(made)).toBe(true);
    expect((await stat(made)).mode & 0o777).toBe(PRIVATE_DIRECTORY_MODE);
    expect(await makeDirectoryIn(made)).toBe(false);
    await expect(makeDirectoryIn(join(dir, "gone", "inner"))).rejects.toMatchObject({ code: "ENOENT" });
    await expect(stat(join(dir, "gone"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("makeDirectoriesBelow", () => {
  it("makes the folders between a root and a target, private, and nothing when they are there", async () => {
    const target = join(dir, "inbox", "2026-12-06", "discord");
    await makeDirectoriesBelow(dir, target);
    for (const made of [join(dir, "inbox"), join(dir, "inbox", "2026-12-06"), target])
      expect((await stat(made)).mode & 0o777).toBe(PRIVATE_DIRECTORY_MODE);
    await makeDirectoriesBelow(dir, target);
    expect(await readdir(join(dir, "inbox"))).toEqual(["2026-12-06"]);
  });

  it("never makes a root that vanished, nor anything inside it", async () => {
    const root = join(dir, "home", "workspace");
    await expect(makeDirectoriesBelow(root, join(root, "notes", "2026"))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(await readdir(dir)).toEqual([]);
  });

  it("takes the root itself as the target: nothing made, and it must exist", async () => {
    await makeDirectoriesBelow(dir, dir);
    await expect(makeDirectoriesBelow(join(dir, "gone"), join(dir, "gone"))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(await readdir(dir)).toEqual([]);
  });

  it("refuses a target that is not below the root", async () => {
    await expect(makeDirectoriesBelow(join(dir, "a"), join(dir, "b"))).rejects.toThrow(/not below/);
    await expect(makeDirectoriesBelow(join(dir, "a"), dir)).rejects.toThrow(/not below/);
  });

  it("takes a folder whose name starts with two dots as below the root", async () => {
    await makeDirectoriesBelow(dir, join(dir, "..drafts", "2026"));
    expect(await readdir(join(dir, "..drafts"))).toEqual(["2026"]);
  });
});

describe("removeStaleTempFiles", () => {
  it("removes only the temp files a write left behind", async () => {
    await writeFile(join(dir, ".state.json.0123456789abcdef.tmp"), "partial");
    await writeFile(join(dir, "state.json"), "whole");
    await writeFile(join(dir, "notes.tmp"), "not ours");
    expect(await removeStaleTempFiles(dir)).toEqual([".state.json.0123456789abcdef.tmp"]);
    expect((await readdir(dir)).sort()).toEqual(["notes.tmp", "state.json"]);
  });

  it("never takes a session file or a Markdown file for a temp file", () => {
    const part = fc.string({ minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(part, part, (channel, id) => {
        const stem = sessionKeyToFileStem(
          formatSessionKey({ channel, account: "a", kind: "dm", id: `${id}.tmp` }),
        );
        for (const name of [
          `${stem}.json`,
          `${stem}.jsonl`,
          `${stem}.json.corrupt-2025-01-01T00-00-00-000Z`,
          `${id}.md`,
        ]) {
          expect(isDurableWriteTempFile(name)).toBe(false);
        }
      }),
    );
  });
});
