import { createHmac, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

/** How long a signed attachment URL stays valid on Discord's CDN (its `ex` parameter): 24 hours. */
const URL_VALIDITY_MS = 24 * 60 * 60_000;

/** Bytes written per chunk, so a client reading a large file sees it arrive in pieces. */
const CHUNK_BYTES = 64 * 1024;

/** A file the fake CDN serves under `/attachments/{channel}/{id}/{filename}`. */
export interface FakeCdnFile {
  readonly id: string;
  readonly channelId: string;
  readonly filename: string;
  readonly contentType?: string;
  /** The bytes served; without them, `size` bytes of filler text (`x`), made as they are sent. */
  readonly bytes?: Uint8Array;
  readonly size: number;
  /** Sends the first chunk, then nothing more until the client goes away (a download that hangs). */
  readonly stall?: boolean;
}

/** One request the fake CDN answered. */
export interface FakeCdnRequest {
  /** Path and query as requested. */
  readonly url: string;
  readonly status: number;
  /** True when the request carried an `Authorization` header (the CDN needs none: a bot token there leaks). */
  readonly authorization: boolean;
  /** Body bytes written before the response ended or the client went away. */
  readonly bytesSent: number;
  readonly at: number;
}

/** The CDN half of the fake: signed attachment URLs on the fake's own origin, as `cdn.discordapp.com` serves them. */
export interface FakeCdn {
  /** Stores a file and returns its signed URL: `{origin}/attachments/{channel}/{id}/{name}?ex=…&is=…&hm=…`. */
  put(file: FakeCdnFile): string;
  /** True for a path the CDN answers (`/attachments/…`). */
  handles(path: string): boolean;
  handle(request: IncomingMessage, response: ServerResponse, url: URL): void;
  requests(): readonly FakeCdnRequest[];
}

/** What the CDN needs from the rest of the fake. */
export interface FakeCdnDependencies {
  /** `http://127.0.0.1:PORT`, known once the server listens. */
  readonly origin: () => string;
  /** Milliseconds since the epoch, for the URL's expiry. */
  readonly clock: () => number;
}

const ATTACHMENT_PATH = /^\/attachments\/(\d+)\/(\d+)\/([^/]+)$/;

/**
 * Creates the fake CDN. Like Discord's, its URLs are signed (`hm`, an HMAC over path, `ex` and `is`) and expire
 * (`ex`, hex seconds); a URL with a wrong or missing signature, an expired one or an unknown file gets 404
 * "This content is no longer available.", as on Discord.
 */
export function createFakeCdn(dependencies: FakeCdnDependencies): FakeCdn {
  const secret = randomBytes(16);
  const files = new Map<string, FakeCdnFile>();
  const records: FakeCdnRequest[] = [];
  const sign = (path: string, ex: string, is: string) =>
    createHmac("sha256", secret).update(`${path}?ex=${ex}&is=${is}`).digest("hex");
  const pathOf = (file: FakeCdnFile) =>
    `/attachments/${file.channelId}/${file.id}/${encodeURIComponent(file.filename)}`;

  return {
    put(file) {
      files.set(file.id, file);
      const now = dependencies.clock();
      const is = Math.floor(now / 1000).toString(16);
      const ex = Math.floor((now + URL_VALIDITY_MS) / 1000).toString(16);
      const path = pathOf(file);
      return `${dependencies.origin()}${path}?ex=${ex}&is=${is}&hm=${sign(path, ex, is)}`;
    },
    handles: (path) => path.startsWith("/attachments/"),
    handle(request, response, url) {
      let bytesSent = 0;
      const authorization = request.headers.authorization !== undefined;
      const record = () =>
        records.push({
          url: `${url.pathname}${url.search}`,
          status: response.statusCode,
          authorization,
          bytesSent,
          at: Date.now(),
        });
      const file = servable(url);
      if (file === undefined || request.method !== "GET") {
        response.writeHead(404, { "content-type": "text/plain" });
        response.end("This content is no longer available.");
        record();
        return;
      }
      response.writeHead(200, {
        "content-type": file.contentType ?? "application/octet-stream",
        "content-length": String(file.size),
      });
      response.on("close", record);
      const write = (offset: number): void => {
        if (response.destroyed) return;
        if (offset >= file.size) {
          response.end();
          return;
        }
        const end = Math.min(offset + CHUNK_BYTES, file.size);
        const chunk =
          file.bytes === undefined
            ? Buffer.alloc(end - offset, "x")
            : Buffer.from(file.bytes.subarray(offset, end));
        bytesSent += chunk.length;
        const drained = response.write(chunk);
        if (file.stall === true) return;
        if (drained) setImmediate(() => write(end));
        else response.once("drain", () => write(end));
      };
      write(0);
    },
    requests: () => [...records],
  };

  function servable(url: URL): FakeCdnFile | undefined {
    const match = ATTACHMENT_PATH.exec(url.pathname);
    const file = match === null ? undefined : files.get(match[2] ?? "");
    if (file === undefined || url.pathname !== pathOf(file)) return undefined;
    const ex = url.searchParams.get("ex") ?? "";
    const is = url.searchParams.get("is") ?? "";
    if (url.searchParams.get("hm") !== sign(pathOf(file), ex, is)) return undefined;
    const expires = Number.parseInt(ex, 16) * 1000;
    return Number.isFinite(expires) && expires > dependencies.clock() ? file : undefined;
  }
}
