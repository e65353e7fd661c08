import { createCipheriv, createHash, randomBytes } from "node:crypto";

/** How {@link postWebhook} delivers an event, mirroring the app's "Encryption strategy" in the console. */
export interface WebhookDeliveryOptions {
  /** Encrypts the body (`{"encrypt": …}`) and signs the request, as Feishu does when an Encrypt Key is set. */
  readonly encryptKey?: string;
  /** Written into the payload (`header.token`, or `token` for v1 events and `url_verification`). */
  readonly verificationToken?: string;
  /** Sends a signature that does not match the body (a forged request). */
  readonly badSignature?: boolean;
  /** Unix seconds for `X-Lark-Request-Timestamp`; default now. */
  readonly timestamp?: string;
}

/** What the app answered. `body` is parsed JSON when the answer was JSON, else the text. */
export interface WebhookResponse {
  readonly status: number;
  readonly body: unknown;
  /** The exact request body that was sent (to replay it). */
  readonly sentBody: string;
  readonly sentHeaders: Readonly<Record<string, string>>;
}

/**
 * Encrypts a payload the way Feishu does: AES-256-CBC with key sha256(encryptKey), a random 16-byte IV
 * prepended to the cipher text, PKCS#7 padding, base64.
 */
export function encryptFeishuPayload(plainText: string, encryptKey: string): string {
  const key = createHash("sha256").update(encryptKey).digest();
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-cbc", key, iv);
  return Buffer.concat([iv, cipher.update(plainText, "utf8"), cipher.final()]).toString("base64");
}

/** `X-Lark-Signature`: hex sha256 of timestamp + nonce + encryptKey + raw body. */
export function signFeishuRequest(
  timestamp: string,
  nonce: string,
  encryptKey: string,
  body: string,
): string {
  return createHash("sha256")
    .update(timestamp + nonce + encryptKey)
    .update(body)
    .digest("hex");
}

/** POSTs an event to an app's request URL like the Feishu open platform does (encrypted and signed on request). */
export async function postWebhook(
  url: string,
  payload: unknown,
  options: WebhookDeliveryOptions = {},
): Promise<WebhookResponse> {
  const plain = JSON.stringify(withToken(payload, options.verificationToken));
  const body =
    options.encryptKey === undefined
      ? plain
      : JSON.stringify({ encrypt: encryptFeishuPayload(plain, options.encryptKey) });
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8" };
  if (options.encryptKey !== undefined) {
    const timestamp = options.timestamp ?? String(Math.floor(Date.now() / 1000));
    const nonce = randomBytes(8).toString("hex");
    const signature = signFeishuRequest(timestamp, nonce, options.encryptKey, body);
    headers["x-lark-request-timestamp"] = timestamp;
    headers["x-lark-request-nonce"] = nonce;
    headers["x-lark-signature"] = options.badSignature ? flipFirstHexDigit(signature) : signature;
  } else if (options.badSignature) {
    headers["x-lark-request-timestamp"] = String(Math.floor(Date.now() / 1000));
    headers["x-lark-request-nonce"] = "nonce";
    headers["x-lark-signature"] = "0".repeat(64);
  }
  const response = await fetch(url, { method: "POST", headers, body });
  const text = await response.text();
  return { status: response.status, body: parseMaybeJson(text), sentBody: body, sentHeaders: headers };
}

function withToken(payload: unknown, token: string | undefined): unknown {
  if (token === undefined || !isRecord(payload)) return payload;
  const header = payload.header;
  return isRecord(header) ? { ...payload, header: { ...header, token } } : { ...payload, token };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function flipFirstHexDigit(hex: string): string {
  return (hex.startsWith("0") ? "1" : "0") + hex.slice(1);
}

function parseMaybeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
