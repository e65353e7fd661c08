import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { defineTool, type Tool } from "@almanac/agent";
import { describeError } from "@almanac/core";
import type { Agent, Dispatcher } from "undici";
import { z } from "zod";
import { type AddressPolicy, createAddressPolicy } from "./address-policy.js";

/** Options of {@link createWebFetchTool}. */
export interface WebFetchOptions {
  /** Addresses and CIDR ranges a fetch may reach although they are not public (a LAN service; tests). */
  readonly allow?: readonly string[];
  /** Largest response body read, in bytes (the rest is cut off). Default 2 MiB. */
  readonly maxBytes?: number;
  /** Whole fetch, redirects included. Default 15 s. */
  readonly timeoutMs?: number;
  /** Longest text handed to the model. Default 20,000 characters. */
  readonly maxChars?: number;
  /** Redirects followed, each checked like the first request. Default 5. */
  readonly maxRedirects?: number;
  /** Sent as `User-Agent`. */
  readonly userAgent?: string;
  /** Resolves a host name (tests inject one; default the system's resolver). */
  readonly lookup?: typeof dnsLookup;
}

/** Why a fetch was refused or failed, in words the model can pass on. */
export class WebFetchRefusal extends Error {}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A dispatcher whose every connection goes to an address the policy allows: the host name is resolved here and
 * each address checked before connecting, so a name that resolves to 127.0.0.1 (or is changed to, between a check
 * and the request) is refused at the connection itself.
 */
function guardedAgent(AgentClass: typeof Agent, policy: AddressPolicy, resolve: typeof dnsLookup): Agent {
  const lookup = (hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
    resolve(hostname, { all: true }, (error, addresses) => {
      if (error) return callback(error, "");
      const list = addresses as LookupAddress[];
      for (const entry of list) {
        const refusal = policy.refusal(entry.address);
        if (refusal !== null) {
          return callback(
            Object.assign(new WebFetchRefusal(`${hostname} resolves to ${refusal}`), { code: "EREFUSED" }),
            "",
          );
        }
      }
      const first = list[0];
      if (first === undefined)
        return callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "");
      if (options.all) callback(null, list);
      else callback(null, first.address, first.family);
    });
  };
  return new AgentClass({ connect: { lookup: lookup as never } });
}

async function readLimited(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
): Promise<{ bytes: Buffer; cut: boolean }> {
  if (body === null) return { bytes: Buffer.alloc(0), cut: false };
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: Buffer.concat(chunks), cut: false };
      size += value.byteLength;
      chunks.push(Buffer.from(value));
      if (size >= maxBytes) return { bytes: Buffer.concat(chunks).subarray(0, maxBytes), cut: true };
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function isTextual(contentType: string): boolean {
  return /^text\/|[/+](json|xml|javascript)\b|^application\/(x-)?yaml/i.test(contentType);
}

/** Checks a URL before any connection: http(s) only, no credentials, and a literal address the policy allows. */
function checkUrl(url: URL, policy: AddressPolicy): void {
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new WebFetchRefusal(`only http and https URLs can be fetched, not ${url.protocol}`);
  if (url.username !== "" || url.password !== "")
    throw new WebFetchRefusal("URLs with credentials are not fetched");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0) {
    const refusal = policy.refusal(host);
    if (refusal !== null) throw new WebFetchRefusal(`${url.host} is refused: ${refusal}`);
  }
}

/**
 * Fetches one page the way `web_fetch` does: GET only, redirects followed by hand (each target checked like the
 * first), every connection to a public address (or one allowed), within the byte and time limits. Returns the
 * readable text (Markdown for HTML) with the final URL.
 */
export async function fetchReadable(
  address: string,
  options: WebFetchOptions & { readonly signal?: AbortSignal } = {},
): Promise<{ readonly url: string; readonly title: string; readonly text: string; readonly cut: boolean }> {
  const policy = createAddressPolicy(options.allow);
  // Loaded on the first page fetched, not with the server (start-up time and idle memory).
  const { Agent: AgentClass, fetch: undiciFetch } = await import("undici");
  const dispatcher: Dispatcher = guardedAgent(AgentClass, policy, options.lookup ?? dnsLookup);
  const signal = AbortSignal.any([
    AbortSignal.timeout(options.timeoutMs ?? 15_000),
    ...(options.signal === undefined ? [] : [options.signal]),
  ]);
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    throw new WebFetchRefusal(`"${address}" is not a URL`);
  }
  try {
    for (let redirects = 0; ; redirects += 1) {
      checkUrl(url, policy);
      const response = await undiciFetch(url, {
        method: "GET",
        redirect: "manual",
        signal,
        dispatcher,
        headers: {
          "user-agent": options.userAgent ?? "Almanac web_fetch (+https://github.com/)",
          accept: "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5",
        },
      });
      if (response.status >= 300 && response.status < 400 && response.headers.has("location")) {
        await response.body?.cancel();
        if (redirects >= (options.maxRedirects ?? 5)) throw new WebFetchRefusal("too many redirects");
        url = new URL(response.headers.get("location") as string, url);
        continue;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new WebFetchRefusal(`${url.href} answered HTTP ${response.status}`);
      }
      const contentType = response.headers.get("content-type") ?? "";
      if (contentType !== "" && !isTextual(contentType) && !/html/i.test(contentType)) {
        await response.body?.cancel();
        throw new WebFetchRefusal(`${url.href} is not a text page (${contentType})`);
      }
      const { bytes, cut } = await readLimited(
        response.body as ReadableStream<Uint8Array> | null,
        options.maxBytes ?? 2 * 1024 * 1024,
      );
      const body = bytes.toString("utf8");
      const page =
        /html/i.test(contentType) || /^\s*<(!doctype html|html)/i.test(body)
          ? (await import("./html-to-markdown.js")).htmlToMarkdown(body)
          : { title: "", markdown: body };
      return { url: url.href, title: page.title, text: page.markdown, cut };
    }
  } finally {
    await dispatcher.close().catch(() => {});
  }
}

const webFetchParameters = z.object({
  url: z.string().min(1).describe("The http(s) URL of the page to read."),
});

/**
 * The `web_fetch` tool: reads a public web page as Markdown. Refuses loopback, private, link-local and
 * cloud-metadata addresses (after DNS, and on every redirect) unless allowed; every failure is a tool error.
 */
export function createWebFetchTool(options: WebFetchOptions = {}): Tool<typeof webFetchParameters> {
  const maxChars = options.maxChars ?? 20_000;
  return defineTool({
    name: "web_fetch",
    description:
      "Read a public web page (http or https) as Markdown text: its main content, title and final URL. Only GET; pages on private networks are refused.",
    parameters: webFetchParameters,
    timeoutMs: (options.timeoutMs ?? 15_000) + 5_000,
    async execute({ url }, context) {
      try {
        const page = await fetchReadable(url, { ...options, signal: context.signal });
        const text =
          page.text.length > maxChars
            ? `${page.text.slice(0, maxChars)}\n\n[… cut at ${maxChars} characters]`
            : page.text;
        const head = [page.title === "" ? undefined : `# ${page.title}`, `Source: ${page.url}`]
          .filter(Boolean)
          .join("\n");
        return `${head}${page.cut ? " (the page was larger than the download limit; its start is shown)" : ""}\n\n${text}`;
      } catch (error) {
        const reason =
          error instanceof WebFetchRefusal ? error.message : (refusalIn(error) ?? describeError(error));
        return { content: `web_fetch could not read ${url}: ${reason}`, isError: true };
      }
    },
  });
}

/** The refusal behind a failed fetch (undici wraps the connection's error as `cause`). */
function refusalIn(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth += 1) {
    if (current instanceof WebFetchRefusal) return current.message;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
