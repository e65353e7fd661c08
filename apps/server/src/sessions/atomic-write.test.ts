import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatSessionKey, sessionKeyToFileStem } from "@almanac/core";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isAtomicTempFile, removeStaleTempFiles, writeFileAtomic } from "./atomic-write.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-atomic-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("writeFileAtomic", () => {
  it("creates or replaces a file and leaves no temp file behind", async () => {
    const path = join(dir, "state.json");
    await writeFileAtomic(path, "one");
    await writeFileAtomic(path, "two");
    expect(await readFile(path, "utf8")).toBe("two");
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("keeps the old content and removes its temp file when the final rename fails", async () => {
    const path = join(dir, "state.json");
    await mkdir(join(path, "occupied"), { recursive: true });
    await expect(writeFileAtomic(path, "new")).rejects.toMatchObject({ code: expect.any(String) });
    expect(await readdir(dir)).toEqual(["state.json"]);
    expect(await readdir(path)).toEqual(["occupied"]);
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

  it("never takes a session file for a temp file", () => {
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
        ]) {
          expect(isAtomicTempFile(name)).toBe(false);
        }
      }),
    );
  });
});
