import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InboxStore } from "./inbox-store.js";

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), "almanac-inbox-"));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

describe("the inbox store", () => {
  it("saves a file private to the server's user, and a second one of the same name beside it", async () => {
    const store = new InboxStore(workspace);
    const first = await store.save("inbox/2026-12-06", "photo.jpg", new Uint8Array([1, 2, 3]));
    const second = await store.save("inbox/2026-12-06", "photo.jpg", new Uint8Array([4, 5]));
    expect([first, second]).toEqual(["inbox/2026-12-06/photo.jpg", "inbox/2026-12-06/photo-2.jpg"]);
    expect([...(await readFile(join(workspace, first)))]).toEqual([1, 2, 3]);
    expect([...(await readFile(join(workspace, second)))]).toEqual([4, 5]);
    expect((await stat(join(workspace, first))).mode & 0o777).toBe(0o600);
    expect((await stat(join(workspace, "inbox"))).mode & 0o777).toBe(0o700);
    // Nothing half-written is left behind.
    expect((await readdir(join(workspace, "inbox/2026-12-06"))).sort()).toEqual(["photo-2.jpg", "photo.jpg"]);
  });

  it("gives files saved at the same moment under one name different names", async () => {
    const store = new InboxStore(workspace);
    const paths = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        store.save("inbox/2026-12-06", "a.txt", new Uint8Array([index])),
      ),
    );
    expect(new Set(paths).size).toBe(8);
    const contents = await Promise.all(paths.map(async (path) => (await readFile(join(workspace, path)))[0]));
    expect(contents.sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it("never makes a workspace that vanished again: the save fails and nothing is written", async () => {
    const home = join(workspace, "home");
    const store = new InboxStore(join(home, "workspace"));
    await expect(store.save("inbox/2026-12-06", "photo.jpg", new Uint8Array([1]))).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(await readdir(workspace)).toEqual([]);
  });
});
