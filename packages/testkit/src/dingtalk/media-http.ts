import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson } from "../http-io.js";
import type { FakeRecords } from "./fake-records.js";
import type { RobotHttp } from "./robot-http.js";
import { MEDIA_UPLOAD_LIMITS } from "./types.js";

/** Options of {@link createMediaHttp}. */
export interface MediaHttpOptions {
  readonly records: FakeRecords;
  readonly robot: RobotHttp;
}

/** The older API's media upload, `POST /media/upload?access_token=…` (multipart `media`). */
export interface MediaHttp {
  /** True for a `media_id` this fake issued. */
  exists(mediaId: string): boolean;
  /** Answers the request when it is the upload route (reading the raw body itself); false otherwise. */
  handle(request: IncomingMessage, response: ServerResponse, url: URL): Promise<boolean>;
}

type MediaType = keyof typeof MEDIA_UPLOAD_LIMITS;
const isMediaType = (type: string | null): type is MediaType =>
  type !== null && Object.hasOwn(MEDIA_UPLOAD_LIMITS, type);

// The older API answers HTTP 200 with an errcode. 40014 (invalid token) is DingTalk's; 40004 (bad type) and 40006
// (bad size) follow its list of older error codes; a missing `media` part is the fake's own 40035.
const BAD_TOKEN = { errcode: 40014, errmsg: "不合法的access_token" };

async function readRaw(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

/** Creates the media upload handler. */
export function createMediaHttp(options: MediaHttpOptions): MediaHttp {
  const { records, robot } = options;
  const media = new Set<string>();

  const refuse = (response: ServerResponse, body: { errcode: number; errmsg: string }) => {
    records.addRejection({ route: "media", status: 200, code: String(body.errcode), message: body.errmsg });
    sendJson(response, 200, body);
  };

  async function upload(request: IncomingMessage, response: ServerResponse, url: URL): Promise<void> {
    const raw = await readRaw(request);
    if (!robot.validToken(url.searchParams.get("access_token"))) {
      refuse(response, BAD_TOKEN);
      return;
    }
    let form: FormData;
    try {
      form = await new Response(new Uint8Array(raw), {
        headers: { "content-type": request.headers["content-type"] ?? "" },
      }).formData();
    } catch (error) {
      refuse(response, { errcode: 40035, errmsg: `not multipart form data: ${String(error)}` });
      return;
    }
    const typeField = form.get("type");
    const type = url.searchParams.get("type") ?? (typeof typeField === "string" ? typeField : null);
    if (!isMediaType(type)) {
      refuse(response, { errcode: 40004, errmsg: `不合法的媒体文件类型: ${type}` });
      return;
    }
    const file = form.get("media");
    if (file === null || typeof file === "string") {
      refuse(response, { errcode: 40035, errmsg: "缺少参数 media" });
      return;
    }
    if (file.size > MEDIA_UPLOAD_LIMITS[type]) {
      refuse(response, {
        errcode: 40006,
        errmsg: `不合法的文件大小: ${file.size} > ${MEDIA_UPLOAD_LIMITS[type]}`,
      });
      return;
    }
    const mediaId = `@media-${randomUUID()}`;
    media.add(mediaId);
    records.addUpload({
      mediaId,
      type,
      fileName: file.name,
      contentType: file.type,
      bytes: new Uint8Array(await file.arrayBuffer()),
    });
    sendJson(response, 200, {
      errcode: 0,
      errmsg: "ok",
      media_id: mediaId,
      type,
      created_at: Date.now(),
    });
  }

  return {
    exists: (mediaId) => media.has(mediaId),
    async handle(request, response, url) {
      if (request.method !== "POST" || url.pathname !== "/media/upload") return false;
      await upload(request, response, url);
      return true;
    },
  };
}
