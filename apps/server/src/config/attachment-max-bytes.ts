import type { AlmanacConfig } from "./config-schema.js";

/**
 * The largest file taken in or sent out, in bytes (`ALMANAC_ATTACHMENT_MAX_MB`): one reading of the config for the
 * intake, `send_file` and `GET /api/files/content`.
 */
export function attachmentMaxBytes(config: AlmanacConfig): number {
  return Math.floor(config.attachments.maxMb * 1_048_576);
}
