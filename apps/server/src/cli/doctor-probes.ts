import { z } from "zod";
import { type CheckResult, check } from "./doctor-types.js";

/** How long a probe waits for an endpoint before calling it unreachable. */
export const PROBE_TIMEOUT_MS = 5_000;

/** An OpenAI-compatible endpoint to probe; the key is sent but never printed. */
export interface EndpointProbe {
  /** Check name in the report, e.g. `model`. */
  readonly name: string;
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey: string | undefined;
  /** The variable to name when the key is refused, e.g. ALMANAC_MODEL_API_KEY. */
  readonly apiKeyVariable: string;
  /** The variables to name when the model is unknown, e.g. ALMANAC_MODEL_NAME. */
  readonly modelVariable: string;
  readonly baseUrlVariable: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly fetch: typeof fetch;
  readonly timeoutMs?: number;
}

type Outcome = { readonly response: Response } | { readonly error: unknown; readonly timedOut: boolean };

/**
 * The request URL without credentials (fetch refuses a URL that has them) and the Basic authorization they
 * stand for, as Node's HTTP client sends it for the chat requests: an API key's Bearer header wins over it.
 */
function splitCredentials(baseUrl: string, path: string): { url: string; basic: string | undefined } {
  const url = new URL(`${baseUrl.replace(/\/+$/, "")}${path}`);
  if (url.username === "" && url.password === "") return { url: url.toString(), basic: undefined };
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  url.username = "";
  url.password = "";
  return { url: url.toString(), basic: `Basic ${Buffer.from(pair).toString("base64")}` };
}

async function send(probe: EndpointProbe, path: string, body?: unknown): Promise<Outcome> {
  const signal = AbortSignal.timeout(probe.timeoutMs ?? PROBE_TIMEOUT_MS);
  try {
    const { url, basic } = splitCredentials(probe.baseUrl, path);
    const response = await probe.fetch(url, {
      method: body === undefined ? "GET" : "POST",
      headers: {
        ...probe.headers,
        ...(basic === undefined ? {} : { authorization: basic }),
        ...(probe.apiKey ? { authorization: `Bearer ${probe.apiKey}` } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal,
    });
    return { response };
  } catch (error) {
    return { error, timedOut: signal.aborted };
  }
}

/** `host:port` of a URL, for messages (never the path, query or credentials). */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** Why a connection failed, in a few words: refused, unknown host, timeout, or the system error code. */
export function networkReason(error: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `no answer within ${timeoutMs / 1000} s`;
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "host name not found";
  return code ?? (error instanceof Error ? error.message : String(error));
}

/** The error message of an OpenAI-style error body, with the key blanked out should the provider echo it. */
async function providerMessage(response: Response, apiKey: string | undefined): Promise<string> {
  const text = await response.text().catch(() => "");
  let message = text;
  try {
    const parsed: unknown = JSON.parse(text);
    const inner = (parsed as { error?: { message?: unknown } } | null)?.error?.message;
    if (typeof inner === "string") message = inner;
  } catch {
    // keep the raw text
  }
  message = message.replace(/\s+/g, " ").trim().slice(0, 200);
  return apiKey ? message.split(apiKey).join("***") : message;
}

function authFailure(probe: EndpointProbe, host: string, status: number): CheckResult {
  return probe.apiKey
    ? check(
        probe.name,
        "fail",
        `${host} refused the API key (HTTP ${status}): authentication failed`,
        `check ${probe.apiKeyVariable} (the key is not shown)`,
      )
    : check(
        probe.name,
        "fail",
        `${host} requires an API key (HTTP ${status}) and none is set`,
        `set ${probe.apiKeyVariable}`,
      );
}

function networkFailure(probe: EndpointProbe, host: string, outcome: Outcome): CheckResult {
  const { error, timedOut } = outcome as { error: unknown; timedOut: boolean };
  return check(
    probe.name,
    "fail",
    `cannot reach ${host} (${networkReason(error, timedOut, probe.timeoutMs ?? PROBE_TIMEOUT_MS)})`,
    `check that the server behind ${probe.baseUrlVariable} is running and the URL is right`,
  );
}

const modelList = z.object({ data: z.array(z.object({ id: z.string() })) });

/** Probes a chat model: `GET /models`, or a one-token chat completion when /models is not served. */
export async function probeChatModel(probe: EndpointProbe): Promise<CheckResult> {
  const host = hostOf(probe.baseUrl);
  const listed = await send(probe, "/models");
  if (!("response" in listed)) return networkFailure(probe, host, listed);
  const { response } = listed;
  if (response.status === 401 || response.status === 403) return authFailure(probe, host, response.status);
  if (response.ok) {
    const parsed = modelList.safeParse(await response.json().catch(() => undefined));
    const ids = parsed.success ? parsed.data.data.map((entry) => entry.id) : [];
    if (ids.length > 0 && !ids.includes(probe.model)) {
      return check(
        probe.name,
        "warn",
        `${host} answers, but its /models list does not include ${probe.model}`,
        `check ${probe.modelVariable} (listed: ${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""})`,
      );
    }
    return check(probe.name, "ok", `${probe.model} at ${host} is reachable`);
  }
  await response.body?.cancel();
  return probeChatCompletion(probe, host);
}

async function probeChatCompletion(probe: EndpointProbe, host: string): Promise<CheckResult> {
  const outcome = await send(probe, "/chat/completions", {
    model: probe.model,
    messages: [{ role: "user", content: "ping" }],
    max_tokens: 1,
  });
  if (!("response" in outcome)) return networkFailure(probe, host, outcome);
  const { response } = outcome;
  if (response.status === 401 || response.status === 403) return authFailure(probe, host, response.status);
  if (response.ok) {
    await response.body?.cancel();
    return check(probe.name, "ok", `${probe.model} at ${host} answered a one-token test`);
  }
  const message = await providerMessage(response, probe.apiKey);
  if (response.status === 404) {
    return check(
      probe.name,
      "fail",
      `${host} answered 404 for ${probe.model}: ${message}`,
      `check ${probe.modelVariable} and ${probe.baseUrlVariable} (it usually ends in /v1)`,
    );
  }
  return check(
    probe.name,
    "fail",
    `${host} answered HTTP ${response.status}: ${message}`,
    `check ${probe.baseUrlVariable} and the provider's status`,
  );
}

/** Probes an embeddings endpoint with one short input. */
export async function probeEmbeddings(probe: EndpointProbe): Promise<CheckResult> {
  const host = hostOf(probe.baseUrl);
  const outcome = await send(probe, "/embeddings", { model: probe.model, input: "almanac doctor" });
  if (!("response" in outcome)) return networkFailure(probe, host, outcome);
  const { response } = outcome;
  if (response.status === 401 || response.status === 403) return authFailure(probe, host, response.status);
  if (response.ok) {
    await response.body?.cancel();
    return check(probe.name, "ok", `${probe.model} at ${host} returned an embedding`);
  }
  const message = await providerMessage(response, probe.apiKey);
  return check(
    probe.name,
    "fail",
    `${host} answered HTTP ${response.status} for ${probe.model}: ${message}`,
    `check ${probe.modelVariable} and ${probe.baseUrlVariable}`,
  );
}
