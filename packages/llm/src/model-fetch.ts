import { EnvHttpProxyAgent, fetch as undiciFetch } from "undici";

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

/**
 * The `fetch` the `openai` client sends model and embedding requests with: undici's, over one connection pool
 * per endpoint that keeps connections alive between requests and goes through the configured proxy (or
 * directly, for hosts in `noProxy` and when no proxy is set). The same on Node 20 and Node 24, whose global
 * fetch differ in whether they honour proxy variables at all.
 */
export function createModelFetch(proxy: ProxySettings = {}): typeof fetch {
  const dispatcher = new EnvHttpProxyAgent({
    // Empty strings, not undefined: undefined makes undici read process.env itself.
    httpProxy: proxy.httpProxy ?? "",
    httpsProxy: proxy.httpsProxy ?? "",
    noProxy: proxy.noProxy ?? "",
  });
  const modelFetch = (input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    });
  // undici's Response is the same web API as the global one; the types differ only in where they come from.
  return modelFetch as unknown as typeof fetch;
}
