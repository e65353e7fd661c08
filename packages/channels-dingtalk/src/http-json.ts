import { z } from "zod";
import { DingTalkError } from "./errors.js";

/** An HTTP answer with its body parsed as JSON when it is JSON (`undefined` otherwise). */
export interface JsonResponse {
  readonly status: number;
  readonly body: unknown;
}

/** Options of {@link postJson} and {@link requestJson}. */
export interface PostJsonOptions {
  readonly headers?: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  /** Names the call in errors, e.g. `sessionWebhook`; never contains a secret. */
  readonly what: string;
  /** Cancels the request besides the timeout (e.g. an attachment download's deadline). */
  readonly signal?: AbortSignal;
}

/**
 * POSTs a JSON body and reads the answer as `unknown` (callers validate it).
 * @throws DingTalkError `dingtalk.network` when no HTTP answer arrives (refused, reset, timeout).
 */
export function postJson(url: string, body: unknown, options: PostJsonOptions): Promise<JsonResponse> {
  return requestJson("POST", url, body, options);
}

/**
 * Sends a JSON body with `method` (DingTalk's card streaming is a `PUT`) and reads the answer as `unknown`.
 * @throws DingTalkError `dingtalk.network` when no HTTP answer arrives (refused, reset, timeout, aborted).
 */
export async function requestJson(
  method: "POST" | "PUT",
  url: string,
  body: unknown,
  options: PostJsonOptions,
): Promise<JsonResponse> {
  let response: Response;
  let text: string;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  try {
    response = await fetch(url, {
      method,
      headers: { "content-type": "application/json", accept: "application/json", ...options.headers },
      body: JSON.stringify(body),
      signal: options.signal === undefined ? timeout : AbortSignal.any([timeout, options.signal]),
    });
    text = await response.text();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DingTalkError("dingtalk.network", `DingTalk ${options.what} request failed: ${reason}.`, {
      cause: error,
    });
  }
  return { status: response.status, body: parseJson(text) };
}

/** Parses JSON text, `undefined` when it is empty or not JSON (callers validate what they got). */
export function parseJson(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const errorBodySchema = z
  .object({
    code: z.union([z.string(), z.number()]).optional(),
    errcode: z.union([z.string(), z.number()]).optional(),
    message: z.string().optional(),
    errmsg: z.string().optional(),
  })
  .loose();

/** DingTalk's words from an error body (`{code, message}` or `{errcode, errmsg}`), for error messages. */
export function describeErrorBody(body: unknown): { readonly code?: string; readonly message: string } {
  const parsed = errorBodySchema.safeParse(body);
  if (!parsed.success) return { message: "no JSON error body" };
  const code = parsed.data.code ?? parsed.data.errcode;
  return {
    ...(code === undefined ? {} : { code: String(code) }),
    message: parsed.data.message ?? parsed.data.errmsg ?? "no message",
  };
}
