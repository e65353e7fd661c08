import { readFile, realpath, stat } from "node:fs/promises";
import { join, sep } from "node:path";
import { type Logger, silentLogger, workspaceFilePath } from "@almanac/core";
import type { ImageResolver } from "@almanac/llm";
import { isInboxFilePath } from "./inbox-path.js";

/** Options of {@link createImageResolver}. */
export interface ImageResolverOptions {
  /** The workspace folder image references are relative to. */
  readonly workspace: string;
  /** Longest side of the image the model gets, in pixels (`ALMANAC_IMAGE_MAX_SIDE`). */
  readonly maxSide: number;
  /** Characters of data URLs kept for the next request (default 32 MB): a turn sends the same images each step. */
  readonly cacheChars?: number;
  readonly logger?: Logger;
}

/** The largest image file read for a model; an inbox file is at most `ALMANAC_ATTACHMENT_MAX_MB` anyway. */
const MAX_IMAGE_FILE_BYTES = 256 * 1_048_576;

type Sharp = typeof import("sharp").default;
let sharpModule: Promise<Sharp> | undefined;

/** sharp (libvips), loaded on the first image: a server that never sees one never pays for it. */
function loadSharp(): Promise<Sharp> {
  sharpModule ??= import("sharp").then((loaded) => loaded.default);
  return sharpModule;
}

/**
 * An image as a vision model gets it: turned upright (EXIF orientation), shrunk so its longest side is at most
 * `maxSide` (never enlarged), as PNG when it has transparency, else as JPEG (quality 85): formats every provider
 * takes, whatever was sent (HEIC, TIFF, BMP, AVIF…). Returns the encoded bytes and their MIME type.
 */
export async function imageForModel(
  bytes: Uint8Array,
  maxSide: number,
): Promise<{
  readonly bytes: Buffer;
  readonly mime: "image/png" | "image/jpeg";
  readonly width: number;
  readonly height: number;
}> {
  const sharp = await loadSharp();
  const image = sharp(bytes, { failOn: "none" });
  const { hasAlpha } = await image.metadata();
  const pipeline = image
    .rotate()
    .resize({ width: maxSide, height: maxSide, fit: "inside", withoutEnlargement: true });
  const output = hasAlpha
    ? await pipeline.png({ compressionLevel: 9 }).toBuffer({ resolveWithObject: true })
    : await pipeline.jpeg({ quality: 85, mozjpeg: true }).toBuffer({ resolveWithObject: true });
  return {
    bytes: output.data,
    mime: hasAlpha ? "image/png" : "image/jpeg",
    width: output.info.width,
    height: output.info.height,
  };
}

/**
 * The chat model's {@link ImageResolver} for `almanac-file:` references: only a file in some scope's inbox folder
 * (never a memory file or anything outside the workspace, symbolic links included) becomes a `data:` URL of the
 * resized image, built when a request is made and kept in a small cache (by path, size and modification time) for
 * the next steps of the turn. Any failure (the file is gone, is no image) gives undefined, and the model reads the
 * image's note instead.
 */
export function createImageResolver(options: ImageResolverOptions): ImageResolver {
  const logger = (options.logger ?? silentLogger).child({ component: "attachments" });
  const cacheChars = options.cacheChars ?? 32 * 1_048_576;
  const cache = new Map<string, string>();
  let cachedChars = 0;
  let workspaceReal: Promise<string> | undefined;

  const remember = (key: string, url: string): void => {
    if (url.length > cacheChars) return;
    cache.set(key, url);
    cachedChars += url.length;
    for (const [oldKey, oldUrl] of cache) {
      if (cachedChars <= cacheChars) break;
      cache.delete(oldKey);
      cachedChars -= oldUrl.length;
    }
  };

  return async (url) => {
    const path = workspaceFilePath(url);
    if (path === undefined || !isInboxFilePath(path)) {
      logger.warn({ url: url.slice(0, 200) }, "an image reference outside the inboxes was not resolved");
      return undefined;
    }
    try {
      workspaceReal ??= realpath(options.workspace);
      const root = await workspaceReal;
      const file = await realpath(join(options.workspace, ...path.split("/")));
      // Links are followed only to another inbox file of this workspace.
      const real = file.startsWith(`${root}${sep}`)
        ? file
            .slice(root.length + 1)
            .split(sep)
            .join("/")
        : undefined;
      if (real === undefined || !isInboxFilePath(real)) {
        logger.warn({ path }, "an image reference that leads out of the inboxes was not resolved");
        return undefined;
      }
      const info = await stat(file);
      if (!info.isFile() || info.size > MAX_IMAGE_FILE_BYTES) return undefined;
      const key = `${file}\u0000${info.size}\u0000${info.mtimeMs}\u0000${options.maxSide}`;
      const known = cache.get(key);
      if (known !== undefined) {
        // Most recently used last.
        cache.delete(key);
        cache.set(key, known);
        return known;
      }
      const image = await imageForModel(await readFile(file), options.maxSide);
      const dataUrl = `data:${image.mime};base64,${image.bytes.toString("base64")}`;
      remember(key, dataUrl);
      return dataUrl;
    } catch (error) {
      logger.warn(
        { err: error, path },
        "an image could not be prepared for the model; it gets the note instead",
      );
      return undefined;
    }
  };
}
