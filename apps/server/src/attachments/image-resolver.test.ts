import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createImageResolver } from "./image-resolver.js";

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), "almanac-images-"));
  await mkdir(join(workspace, "inbox", "2026-12-06"), { recursive: true });
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

async function saveImage(name: string, width: number, height: number, alpha = false): Promise<string> {
  const image = sharp({
    create: { width, height, channels: alpha ? 4 : 3, background: { r: 10, g: 120, b: 200, alpha: 0.5 } },
  });
  const bytes = await (name.endsWith(".png") ? image.png() : image.jpeg()).toBuffer();
  await writeFile(join(workspace, "inbox", "2026-12-06", name), bytes);
  return `almanac-file:inbox/2026-12-06/${name}`;
}

async function dimensionsOf(
  dataUrl: string | undefined,
): Promise<{ format?: string; width?: number; height?: number }> {
  const base64 = dataUrl?.slice(dataUrl.indexOf(",") + 1) ?? "";
  const { format, width, height } = await sharp(Buffer.from(base64, "base64")).metadata();
  return { format, width, height };
}

describe("an image as the vision model gets it", () => {
  it("is shrunk to the longest side, keeping its proportions, as JPEG", async () => {
    const resolve = createImageResolver({ workspace, maxSide: 1568 });
    const dataUrl = await resolve(await saveImage("wide.jpg", 4000, 1000));
    expect(dataUrl?.startsWith("data:image/jpeg;base64,")).toBe(true);
    expect(await dimensionsOf(dataUrl)).toEqual({ format: "jpeg", width: 1568, height: 392 });
  });

  it("is never enlarged, and keeps transparency as PNG", async () => {
    const resolve = createImageResolver({ workspace, maxSide: 1568 });
    const dataUrl = await resolve(await saveImage("icon.png", 300, 200, true));
    expect(dataUrl?.startsWith("data:image/png;base64,")).toBe(true);
    expect(await dimensionsOf(dataUrl)).toEqual({ format: "png", width: 300, height: 200 });
  });

  it("is built once for the steps of a turn (the same URL from the cache)", async () => {
    const resolve = createImageResolver({ workspace, maxSide: 512 });
    const url = await saveImage("a.jpg", 2000, 2000);
    const first = await resolve(url);
    expect(await resolve(url)).toBe(first);
    expect(await dimensionsOf(first)).toMatchObject({ width: 512, height: 512 });
  });

  it("is never made of a file outside the inboxes, even through a link, or of a file that is no image", async () => {
    const resolve = createImageResolver({ workspace, maxSide: 512 });
    await writeFile(join(workspace, "MEMORY.md"), "secret");
    await writeFile(join(workspace, "inbox", "2026-12-06", "notes.txt"), "hello");
    await symlink(join(workspace, "MEMORY.md"), join(workspace, "inbox", "2026-12-06", "link.jpg"));
    const outside = await mkdtemp(join(tmpdir(), "almanac-outside-"));
    try {
      await writeFile(join(outside, "x.jpg"), "x");
      await symlink(join(outside, "x.jpg"), join(workspace, "inbox", "2026-12-06", "away.jpg"));
      for (const url of [
        "almanac-file:MEMORY.md",
        "almanac-file:inbox/2026-12-06/../../MEMORY.md",
        "almanac-file:inbox/2026-12-06/notes.txt",
        "almanac-file:inbox/2026-12-06/away.jpg",
        "almanac-file:inbox/2026-12-06/link.jpg",
        "almanac-file:inbox/2026-12-06/missing.jpg",
        "https://example.com/x.jpg",
      ])
        expect(await resolve(url), url).toBeUndefined();
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});
