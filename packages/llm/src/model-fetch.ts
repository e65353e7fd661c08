import type { Dispatcher } from "undici";

/**
 * Where model requests go through a proxy, as the usual variables say (`HTTP_PROXY`, `HTTPS_PROXY`,
 * `NO_PROXY`). Given explicitly: the library never reads the environment itself (an empty string is "none").
 */
export interface ProxySettings {
  /** Proxy for `http://` endpoints. */
  readonly httpProxy?: string;
  /** Proxy for `https://` endpoints. */
  readonly httpsProxy?: string;
  /** Hosts reached directly: comma-separated names, domains (`.corp.example`), `host:port`, or `*`. */
  readonly noProxy?: string;
}

/** Redirects followed, as `fetch` follows them (a model endpoint behind a moved path). */
const MAX_REDIRECTIONS = 5;

/** Statuses whose response has no body (a `Response` refuses one). */
const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([101, 103, 204, 205, 304]);

type FetchInput = Parameters<typeof fetch>[0];

/**
 * The `fetch` the `openai` client sends model and embedding requests with, over one undici connection pool per
 * endpoint that keeps connections alive between requests and goes through the configured proxy (or directly,
 * for hosts in `noProxy` and when no proxy is set). The same on Node 20 and Node 24, whose global fetch differ
 * in whether they honour proxy variables at all.
 *
 * Requests go out through undici's `request` on that pool and come back as a standard `Response` over the
 * received bytes: undici's `fetch` costs the main thread ~100 µs more a call for the same request (web streams
 * for the request body, the fetch algorithm's bookkeeping), measured in docs/decisions/0008-turn-io-measured.md.
 * A body only the platform knows how to encode (its `FormData`, a `Blob`, a stream) is encoded by the
 * platform's own `Request` first, so a form built with the global `FormData` is sent as the form it is.
 */
export function createModelFetch(proxy: ProxySettings = {}): typeof fetch {
  // undici is loaded with the first request, not with the server (start-up time and idle memory).
  let pool: Promise<Pool> | undefined;
  return async (input: FetchInput, init?: RequestInit): Promise<Response> => {
    pool ??= openPool(proxy);
    const opened = await pool;
    const body = init?.body ?? undefined;
    const signal = init?.signal ?? undefined;
    if (
      !(input instanceof Request) &&
      (body === undefined || typeof body === "string" || body instanceof Uint8Array)
    )
      return send(opened, { url: input, method: init?.method, headers: init?.headers, body, signal });
    const prepared = new Request(input, { ...init, duplex: "half" } as RequestInit);
    return send(opened, {
      url: prepared.url,
      method: prepared.method,
      headers: prepared.headers,
      body: prepared.body === null ? undefined : new Uint8Array(await prepared.arrayBuffer()),
      signal,
    });
  };
}

/** undici's `request` and the endpoint's connection pool. */
interface Pool {
  readonly request: typeof import("undici").request;
  readonly dispatcher: Dispatcher;
}

async function openPool(proxy: ProxySettings): Promise<Pool> {
  const { EnvHttpProxyAgent, interceptors, request } = await import("undici");
  const dispatcher = new EnvHttpProxyAgent({
    // Empty strings, not undefined: undefined makes undici read process.env itself.
    httpProxy: proxy.httpProxy ?? "",
    httpsProxy: proxy.httpsProxy ?? "",
    noProxy: proxy.noProxy ?? "",
  }).compose(interceptors.redirect({ maxRedirections: MAX_REDIRECTIONS }));
  return { request, dispatcher };
}

/** One request as {@link send} takes it. */
interface Outgoing {
  readonly url: string | URL;
  readonly method: string | undefined;
  readonly headers: HeadersInit | undefined;
  readonly body: string | Uint8Array | undefined;
  readonly signal: AbortSignal | undefined;
}

/** Sends one request and answers with a `Response` over what came back. */
async function send({ request, dispatcher }: Pool, outgoing: Outgoing): Promise<Response> {
  const { url, body, signal } = outgoing;
  const method = (outgoing.method ?? "GET").toUpperCase() as Dispatcher.HttpMethod;
  const answer = await request(url, {
    dispatcher,
    method,
    headers: headerRecord(outgoing.headers),
    ...(body === undefined ? {} : { body }),
    ...(signal === undefined ? {} : { signal }),
  });
  const headers: [string, string][] = [];
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const each of value) headers.push([name, each]);
    else if (value !== undefined) headers.push([name, value]);
  }
  if (NULL_BODY_STATUSES.has(answer.statusCode) || method === "HEAD") {
    await answer.body.dump();
    return new Response(null, { status: answer.statusCode, headers });
  }
  // The received bytes as a web stream: `Response` takes any async iterable of bytes (Node 20 and 24 alike).
  return new Response(answer.body as unknown as ReadableStream<Uint8Array>, {
    status: answer.statusCode,
    headers,
  });
}

/** The request's headers as one record (names lower-cased, repeated values joined as `Headers` joins them). */
function headerRecord(init: HeadersInit | undefined): Record<string, string> {
  const record: Record<string, string> = {};
  if (init === undefined) return record;
  new Headers(init).forEach((value, name) => {
    record[name] = value;
  });
  return record;
}
