import { createDecipheriv, createHash, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { FeishuWebhookRequest } from "./types.js";

/** The secrets a request URL is protected with (both optional, at least one configured). */
export interface WebhookSecrets {
  readonly encryptKey: string | undefined;
  readonly verificationToken: string | undefined;
}

/** How far a signed request's `X-Lark-Request-Timestamp` may be from our clock: a captured request replays no later. */
export const WEBHOOK_MAX_SKEW_MS = 5 * 60_000;

/** What to do with a webhook request. */
export type WebhookVerdict =
  | { readonly kind: "reject"; readonly status: number; readonly code: string; readonly message: string }
  | { readonly kind: "challenge"; readonly challenge: string }
  | { readonly kind: "event"; readonly payload: Record<string, unknown> };

const objectSchema = z.record(z.string(), z.unknown());
const encryptedSchema = z.object({ encrypt: z.string() });
const challengeSchema = z.object({
  type: z.literal("url_verification"),
  challenge: z.string(),
  token: z.string().optional(),
});
const tokenSchema = z.object({ header: z.object({ token: z.string() }) }).or(z.object({ token: z.string() }));

/**
 * Authenticates and opens a webhook request the way Feishu secures request URLs.
 * With an Encrypt Key, events must carry `X-Lark-Signature` = sha256(timestamp + nonce + encryptKey + raw body),
 * checked before anything is decrypted, and a timestamp within {@link WEBHOOK_MAX_SKEW_MS} of `now`; the `url_verification` request is not signed, so it is accepted when it
 * decrypts (and, with a Verification Token, carries the token). With a Verification Token, every payload's
 * `token` (`header.token` in schema 2.0) must match.
 */
export function openWebhook(
  request: FeishuWebhookRequest,
  secrets: WebhookSecrets,
  now: number = Date.now(),
): WebhookVerdict {
  const bytes =
    typeof request.rawBody === "string" ? Buffer.from(request.rawBody, "utf8") : Buffer.from(request.rawBody);
  const body = objectSchema.safeParse(parseJson(bytes.toString("utf8")));
  if (!body.success) return reject(400, "feishu.webhook_invalid_body", "The body is not a JSON object.");
  const signature = header(request, "x-lark-signature");
  const { encryptKey, verificationToken } = secrets;
  if (encryptKey !== undefined && signature !== undefined) {
    const timestamp = header(request, "x-lark-request-timestamp") ?? "";
    const nonce = header(request, "x-lark-request-nonce") ?? "";
    const expected = createHash("sha256")
      .update(timestamp + nonce + encryptKey)
      .update(bytes)
      .digest();
    if (!sameHex(signature, expected)) {
      return reject(401, "feishu.webhook_signature_invalid", "X-Lark-Signature does not match the body.");
    }
    // The signature covers the timestamp: a request signed long ago (or "in the future") is a replay.
    const seconds = Number(timestamp);
    if (
      timestamp === "" ||
      !Number.isFinite(seconds) ||
      Math.abs(now - seconds * 1000) > WEBHOOK_MAX_SKEW_MS
    ) {
      return reject(
        401,
        "feishu.webhook_stale",
        `X-Lark-Request-Timestamp is more than ${WEBHOOK_MAX_SKEW_MS / 60_000} minutes from the server's clock (a replayed request, or a wrong clock).`,
      );
    }
  }
  let payload = body.data;
  const encrypted = encryptedSchema.safeParse(payload);
  if (encrypted.success) {
    if (encryptKey === undefined) {
      return reject(
        400,
        "feishu.webhook_encrypted",
        "The body is encrypted but no encryptKey is configured.",
      );
    }
    const opened = objectSchema.safeParse(parseJson(decrypt(encrypted.data.encrypt, encryptKey) ?? ""));
    if (!opened.success) return reject(401, "feishu.webhook_decrypt_failed", "The body does not decrypt.");
    payload = opened.data;
  }
  const challenge = challengeSchema.safeParse(payload);
  if (challenge.success) {
    if (verificationToken !== undefined && challenge.data.token !== verificationToken) {
      return reject(401, "feishu.webhook_token_invalid", "The verification token does not match.");
    }
    return { kind: "challenge", challenge: challenge.data.challenge };
  }
  if (encryptKey !== undefined && signature === undefined) {
    return reject(401, "feishu.webhook_signature_missing", "The request has no X-Lark-Signature.");
  }
  if (verificationToken !== undefined) {
    const token = tokenSchema.safeParse(payload);
    const given = token.success
      ? "header" in token.data
        ? token.data.header.token
        : token.data.token
      : undefined;
    if (given !== verificationToken) {
      return reject(401, "feishu.webhook_token_invalid", "The verification token does not match.");
    }
  }
  return { kind: "event", payload };
}

/** AES-256-CBC with key sha256(encryptKey) and the IV in the first 16 bytes; undefined when it fails. */
function decrypt(encrypted: string, encryptKey: string): string | undefined {
  try {
    const data = Buffer.from(encrypted, "base64");
    if (data.length < 32) return undefined;
    const key = createHash("sha256").update(encryptKey).digest();
    const decipher = createDecipheriv("aes-256-cbc", key, data.subarray(0, 16));
    return Buffer.concat([decipher.update(data.subarray(16)), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}

function reject(status: number, code: string, message: string): WebhookVerdict {
  return { kind: "reject", status, code, message };
}

/** Header value by case-insensitive name (the first one when repeated). */
function header(request: FeishuWebhookRequest, name: string): string | undefined {
  const entry = Object.entries(request.headers).find(([key]) => key.toLowerCase() === name);
  const value = entry?.[1];
  return typeof value === "string" ? value : value?.[0];
}

function sameHex(given: string, expected: Buffer): boolean {
  if (!/^[0-9a-fA-F]{64}$/.test(given)) return false;
  return timingSafeEqual(Buffer.from(given, "hex"), expected);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
