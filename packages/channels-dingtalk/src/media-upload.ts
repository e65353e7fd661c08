import { z } from "zod";
import type { AccessTokenCache } from "./access-token.js";
import { DingTalkError } from "./errors.js";
import { parseJson } from "./http-json.js";

/** A media type of DingTalk's upload (`video` is not used: videos are sent as files). */
export type MediaType = "image" | "file" | "voice";

/**
 * Largest upload per type, in bytes, as DingTalk's `media/upload` documents them: image 20 MB (jpg, gif, png, bmp),
 * file 20 MB, voice 2 MB (amr, mp3, wav). A larger file is refused here, before uploading.
 */
export const MEDIA_UPLOAD_LIMITS: Readonly<Record<MediaType, number>> = {
  image: 20 * 1024 * 1024,
  file: 20 * 1024 * 1024,
  voice: 2 * 1024 * 1024,
};

/** Image types DingTalk shows as a picture; any other image is sent as a file. */
const PICTURE_TYPES: ReadonlySet<string> = new Set(["image/jpeg", "image/png", "image/gif", "image/bmp"]);

/** How a file of `contentType` is uploaded and sent: as a picture, or as a file. */
export function mediaTypeOf(contentType: string): "image" | "file" {
  return PICTURE_TYPES.has(contentType.toLowerCase()) ? "image" : "file";
}

/** Settings of {@link MediaUploader}. */
export interface MediaUploaderSettings {
  /** `https://oapi.dingtalk.com`, or a fake's URL in tests. */
  readonly oapiBaseUrl: string;
  readonly tokens: AccessTokenCache;
  readonly timeoutMs: number;
}

const uploadAnswerSchema = z
  .object({ errcode: z.number().optional(), errmsg: z.string().optional(), media_id: z.string().optional() })
  .loose();

/** `errcode`s of the older API for a token that is invalid or expired: fetched again once. */
const TOKEN_ERRCODES: ReadonlySet<number> = new Set([40001, 40014, 42001]);

/**
 * DingTalk's media upload (`POST oapi.dingtalk.com/media/upload`, multipart `media`), the only way to get the
 * `media_id` the robot's picture and file messages take. It is the older API: the token goes in the query and
 * failures come as `errcode` with HTTP 200. The new API's access token is accepted there too.
 */
export class MediaUploader {
  private readonly settings: MediaUploaderSettings;

  constructor(settings: MediaUploaderSettings) {
    this.settings = settings;
  }

  /**
   * Uploads one file and returns its `media_id`.
   * @throws DingTalkError `dingtalk.upload_too_large` over {@link MEDIA_UPLOAD_LIMITS} (nothing is sent),
   * `dingtalk.send_failed` with DingTalk's errcode, `dingtalk.network`, `dingtalk.bad_response`
   */
  async upload(type: MediaType, name: string, contentType: string, bytes: Uint8Array): Promise<string> {
    const limit = MEDIA_UPLOAD_LIMITS[type];
    if (bytes.length > limit) {
      throw new DingTalkError(
        "dingtalk.upload_too_large",
        `"${name}" is ${(bytes.length / 1_048_576).toFixed(1)} MB; DingTalk takes ${type === "image" ? "pictures" : `${type}s`} of at most ${limit / 1_048_576} MB.`,
        { retryable: false },
      );
    }
    for (let attempt = 0; ; attempt += 1) {
      const token = await this.settings.tokens.get();
      const answer = await this.post(type, name, contentType, bytes, token);
      const parsed = uploadAnswerSchema.safeParse(answer.body);
      if (!parsed.success || answer.status !== 200) {
        throw new DingTalkError(
          "dingtalk.send_failed",
          `DingTalk media/upload answered HTTP ${answer.status}.`,
          { status: answer.status },
        );
      }
      const { errcode = 0, errmsg = "", media_id: mediaId } = parsed.data;
      if (errcode === 0 && mediaId !== undefined && mediaId !== "") return mediaId;
      if (TOKEN_ERRCODES.has(errcode) && attempt === 0) {
        this.settings.tokens.invalidate(token);
        continue;
      }
      if (errcode === 0)
        throw new DingTalkError("dingtalk.bad_response", "DingTalk media/upload gave no media_id.");
      throw new DingTalkError(
        "dingtalk.send_failed",
        `DingTalk media/upload refused "${name}" (${errcode} ${errmsg}).`,
        { status: answer.status, platformCode: String(errcode) },
      );
    }
  }

  private async post(
    type: MediaType,
    name: string,
    contentType: string,
    bytes: Uint8Array,
    token: string,
  ): Promise<{ readonly status: number; readonly body: unknown }> {
    // `type` is documented as a form field; it is sent in the query as well, where DingTalk's own samples put it.
    const query = new URLSearchParams({ access_token: token, type });
    const form = new FormData();
    form.set("type", type);
    // A copy on a plain ArrayBuffer: Blob does not take views of shared memory.
    form.set("media", new Blob([new Uint8Array(bytes)], { type: contentType }), name);
    try {
      const response = await fetch(`${this.settings.oapiBaseUrl}/media/upload?${query}`, {
        method: "POST",
        body: form,
        signal: AbortSignal.timeout(this.settings.timeoutMs),
      });
      return { status: response.status, body: parseJson(await response.text()) };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      // The token is in the URL: the error names the call, never the URL.
      throw new DingTalkError("dingtalk.network", `DingTalk media/upload request failed: ${reason}.`, {
        cause: error,
      });
    }
  }
}
