import {
  AttachmentTooLargeError,
  type DownloadedAttachment,
  type DownloadLimits,
  type InboundAttachment,
  isAlmanacError,
} from "@almanac/core";
import { DiscordApiError, discordUserError } from "./errors.js";

/** Where Discord serves attachments: the CDN, and the media proxy some clients link to. */
const DISCORD_CDN_ORIGINS = ["https://cdn.discordapp.com", "https://media.discordapp.net"] as const;

/** Paths under which the CDN serves message attachments. */
const ATTACHMENT_PATH = /^\/(ephemeral-)?attachments\/\d+\/\d+\/[^/]+$/;

/** Redirects followed (each to an allowed origin) before a download is given up. */
const MAX_REDIRECTS = 3;

/**
 * The origins attachments may be downloaded from. With Discord's own REST base (`discord.com` or a subdomain
 * such as `canary.discord.com`) that is Discord's CDN; with any other base (a test's fake, a proxy) only that
 * base's origin, which then serves the CDN too. Any other host a message names is never fetched: the URL comes
 * from a payload, and the server must not fetch addresses others choose.
 */
export function discordCdnOrigins(apiBaseUrl: string): readonly string[] {
  const base = new URL(apiBaseUrl);
  const isDiscord =
    base.protocol === "https:" && (base.hostname === "discord.com" || base.hostname.endsWith(".discord.com"));
  return isDiscord ? DISCORD_CDN_ORIGINS : [base.origin];
}

/** What a download needs besides the attachment. */
export interface AttachmentDownloadContext {
  readonly fetch: typeof fetch;
  /** From {@link discordCdnOrigins}. */
  readonly origins: readonly string[];
}

/**
 * Downloads a message attachment from Discord's CDN within `limits`: refused before any request when the size the
 * message states is over `maxBytes`, read as a stream and cut off as soon as it passes `maxBytes` (a stated size
 * can be wrong), cancelled by `limits.signal`. The bot token is never sent (the CDN's URLs are signed).
 * @throws AttachmentTooLargeError over the limit
 * @throws UserError `discord.download_refused` for a URL off the CDN (or without one)
 * @throws DiscordApiError `discord.download_failed` for an HTTP error, a network failure or a cancel
 */
export async function downloadDiscordAttachment(
  attachment: InboundAttachment,
  limits: DownloadLimits,
  context: AttachmentDownloadContext,
): Promise<DownloadedAttachment> {
  if (attachment.size !== undefined && attachment.size > limits.maxBytes) {
    throw new AttachmentTooLargeError(limits.maxBytes, attachment.size);
  }
  let url = cdnUrl(attachment.url, context.origins);
  const described = attachment.name ?? "an attachment";
  try {
    for (let redirects = 0; ; redirects += 1) {
      const response = await context.fetch(url, { signal: limits.signal, redirect: "manual" });
      const location = response.headers.get("location");
      if (response.status >= 300 && response.status < 400 && location !== null) {
        await response.body?.cancel();
        if (redirects >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects`);
        url = cdnUrl(new URL(location, url).href, context.origins);
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new DiscordApiError(
          "discord.download_failed",
          `Downloading ${described} from Discord's CDN: HTTP ${response.status}`,
          { status: response.status, isRetryable: response.status === 429 || response.status >= 500 },
        );
      }
      const stated = Number(response.headers.get("content-length") ?? Number.NaN);
      if (Number.isFinite(stated) && stated > limits.maxBytes) {
        await response.body?.cancel();
        throw new AttachmentTooLargeError(limits.maxBytes, stated);
      }
      const bytes = await readAtMost(response, limits.maxBytes);
      const contentType = attachment.contentType ?? response.headers.get("content-type") ?? undefined;
      return {
        bytes,
        ...(contentType === undefined ? {} : { contentType }),
        ...(attachment.name === undefined ? {} : { name: attachment.name }),
      };
    }
  } catch (error) {
    if (error instanceof AttachmentTooLargeError || isAlmanacError(error)) throw error;
    const reason = limits.signal.aborted
      ? "cancelled"
      : error instanceof Error
        ? error.message
        : String(error);
    throw new DiscordApiError(
      "discord.download_failed",
      `Downloading ${described} from Discord's CDN: ${reason}`,
      {
        cause: error,
        isRetryable: !limits.signal.aborted,
      },
    );
  }
}

/** The attachment's URL when it is an attachment path on an allowed origin. */
function cdnUrl(raw: string | undefined, origins: readonly string[]): URL {
  let url: URL | undefined;
  try {
    url = raw === undefined ? undefined : new URL(raw);
  } catch {
    url = undefined;
  }
  if (url === undefined || !origins.includes(url.origin) || !ATTACHMENT_PATH.test(url.pathname)) {
    throw discordUserError(
      "discord.download_refused",
      `Not downloading ${raw === undefined ? "an attachment without a URL" : `"${raw}"`}: attachments are fetched only from ${origins.join(", ")}/attachments/.`,
    );
  }
  return url;
}

/** The body, read chunk by chunk and cancelled as soon as it passes `maxBytes`. */
async function readAtMost(response: Response, maxBytes: number): Promise<Uint8Array> {
  if (response.body === null) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new AttachmentTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
