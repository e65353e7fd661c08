import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isMissing, readTextIfExists } from "./file-helpers.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-file-helpers-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("readTextIfExists", () => {
  it("reads a file, and answers undefined for a missing one or a link to nothing", async () => {
    await writeFile(join(dir, "a.json"), '{"é":1}');
    await symlink(join(dir, "gone.json"), join(dir, "dangling.json"));
    expect(await readTextIfExists(join(dir, "a.json"))).toBe('{"é":1}');
    expect(await readTextIfExists(join(dir, "missing.json"))).toBeUndefined();
    expect(await readTextIfExists(join(dir, "dangling.json"))).toBeUndefined();
    expect(isMissing(join(dir, "missing.json"))).toBe(true);
    expect(isMissing(join(dir, "a.json"))).toBe(false);
  });

  it("throws what is there but unreadable as a file, rather than calling it missing", async () => {
    await mkdir(join(dir, "folder.json"));
    await expect(readTextIfExists(join(dir, "folder.json"))).rejects.toMatchObject({ code: "EISDIR" });
  });
});
