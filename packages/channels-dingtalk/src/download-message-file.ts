import { AttachmentTooLargeError, type DownloadedAttachment, type DownloadLimits } from "@almanac/core";
import { DingTalkError } from "./errors.js";
import type { RobotOpenApi } from "./robot-api.js";

/** What {@link downloadMessageFile} needs besides the file's download code. */
export interface MessageFileSource {
  readonly openApi: RobotOpenApi;
  /** The OpenAPI's base URL: a download URL on its origin is followed even without https (a fake in tests). */
  readonly apiBaseUrl: string;
}

/**
 * Downloads a received picture, file, voice or video message by its download code: DingTalk's
 * `messageFiles/download` names a short-lived URL, which is read in a stream and abandoned as soon as it passes
 * `limits.maxBytes` (or at once when its `content-length` says so). Only an https URL, or one on the configured API
 * base, is followed: the URL comes from an answer, and the server must not be pointed at an address of its own network.
 * @throws AttachmentTooLargeError past `limits.maxBytes`; DingTalkError `dingtalk.download_failed` (URL not followed,
 * HTTP error), `dingtalk.network` (no answer, aborted by `limits.signal`), or what the OpenAPI call throws
 * (`dingtalk.send_failed` with DingTalk's words for a refused download code)
 */
export async function downloadMessageFile(
  source: MessageFileSource,
  downloadCode: string,
  limits: DownloadLimits,
): Promise<DownloadedAttachment> {
  const url = await source.openApi.downloadUrl(downloadCode, limits.signal);
  const target = followableUrl(url, source.apiBaseUrl);
  let response: Response;
  try {
    response = await fetch(target, { signal: limits.signal, redirect: "error" });
  } catch (error) {
    throw new DingTalkError("dingtalk.network", `DingTalk file download failed: ${reasonOf(error)}.`, {
      cause: error,
    });
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => {});
    throw new DingTalkError(
      "dingtalk.download_failed",
      `DingTalk file download answered HTTP ${response.status}.`,
      { status: response.status },
    );
  }
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limits.maxBytes) {
    await response.body?.cancel().catch(() => {});
    throw new AttachmentTooLargeError(limits.maxBytes, declared);
  }
  const bytes = await readWithin(response, limits.maxBytes);
  const contentType = response.headers.get("content-type")?.split(";")[0]?.trim();
  return { bytes, ...(contentType ? { contentType } : {}) };
}

/** The URL to fetch, when it may be fetched. */
function followableUrl(url: string, apiBaseUrl: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (error) {
    throw new DingTalkError("dingtalk.download_failed", "DingTalk gave a download URL that is not a URL.", {
      cause: error,
    });
  }
  if (parsed.protocol === "https:" || parsed.origin === new URL(apiBaseUrl).origin) return parsed;
  throw new DingTalkError(
    "dingtalk.download_failed",
    `DingTalk gave a download URL on ${parsed.protocol}//${parsed.host}, which is not https; it was not followed.`,
    { retryable: false },
  );
}

/** Reads the body, cancelling it as soon as it passes `maxBytes`. */
async function readWithin(response: Response, maxBytes: number): Promise<Uint8Array> {
  const reader = response.body?.getReader();
  if (reader === undefined) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => {});
        throw new AttachmentTooLargeError(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof AttachmentTooLargeError) throw error;
    throw new DingTalkError("dingtalk.network", `DingTalk file download broke off: ${reasonOf(error)}.`, {
      cause: error,
    });
  }
  return Buffer.concat(chunks);
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
