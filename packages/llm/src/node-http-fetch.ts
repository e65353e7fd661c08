import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

/** The agents' socket timeout: the longest a kept-alive connection waits for reuse (see createNodeHttpFetch). */
const IDLE_CONNECTION_LIMIT_MS = 10 * 60_000;

/**
 * A `fetch` for the `openai` client over `node:http`/`node:https` with keep-alive agents.
 *
 * Why not the global `fetch` (undici): in the server's turn path, the OpenAI client's request through it was
 * the largest single cost of a turn (undici, its web streams and abort plumbing: ~37 % of the main thread's
 * samples in `bench/server-process.ts`'s 100 × 10 phase). The same `chat.completions.create` from a client
 * process to the scripted model in another process (2,000 calls, 20 messages): 0.69–0.88 ms of client CPU a
 * call with the global fetch, 0.45–0.59 ms with this one (`node:http` alone: 0.20–0.35 ms).
 *
 * What it does like the global fetch: the method, headers and a string or byte body go out as given; the
 * signal aborts the request (rejecting with the signal's reason, or an `AbortError`); a gzip, deflate or
 * brotli body is decoded. What it does its own way: a response that is not an event stream is read whole
 * before the promise resolves (so a socket dying mid-body rejects the fetch itself, which the client reports
 * as a connection error); an event stream (`text/event-stream`) resolves at the headers and streams. Any
 * other body type (a form, a stream) goes to the global fetch.
 */
export function createNodeHttpFetch(): typeof fetch {
  // An agent with a timeout honours the server's `Keep-Alive: timeout=N` hint: it closes an idle connection a
  // second before the server would (Node's agent ignores the hint when it has no timeout of its own). Without
  // it, a connection the server was closing could be picked for the next request (see `isClosedWhileIdle`).
  // Ten minutes only bounds the rest: connections idle that long, or a request silent that long, which nothing
  // here listens for (the model client has its own timeout).
  const agentOptions = { keepAlive: true, timeout: IDLE_CONNECTION_LIMIT_MS };
  const agents = {
    "http:": new HttpAgent(agentOptions),
    "https:": new HttpsAgent(agentOptions),
  };
  return (input, init) => {
    const body = init?.body;
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    const agent = url.protocol === "http:" || url.protocol === "https:" ? agents[url.protocol] : undefined;
    if (
      (typeof input === "object" && !(input instanceof URL)) ||
      agent === undefined ||
      (body !== undefined && body !== null && typeof body !== "string" && !(body instanceof Uint8Array))
    )
      return fetch(input, init);
    return send(url, agent, init ?? {}, body ?? undefined);
  };
}

/**
 * True for the error of a request written to a kept-alive connection the server had just closed: its idle timeout
 * ran out as the connection was picked for this request (a busy event loop has not yet seen the server's FIN), so
 * the server never read it. Node's documentation gives the pattern (`request.reusedSocket`): send it again.
 */
function isClosedWhileIdle(request: ClientRequest, error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return request.reusedSocket && (code === "ECONNRESET" || code === "EPIPE");
}

function send(
  url: URL,
  agent: HttpAgent,
  init: RequestInit,
  body: string | Uint8Array | undefined,
  resent = false,
): Promise<Response> {
  const { signal } = init;
  return new Promise<Response>((resolve, reject) => {
    const aborted = (): unknown =>
      signal?.reason ?? new DOMException("This operation was aborted", "AbortError");
    if (signal?.aborted) {
      reject(aborted());
      return;
    }
    const headers = headerRecord(init.headers);
    if (body !== undefined && headers["content-length"] === undefined)
      headers["content-length"] = String(
        typeof body === "string" ? Buffer.byteLength(body) : body.byteLength,
      );
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
      method: init.method ?? "GET",
      headers,
      agent,
    });
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      return true;
    };
    const fail = (error: unknown) => {
      if (settle()) reject(error);
    };
    const finish = (response: Response) => {
      if (settle()) resolve(response);
    };
    const onAbort = () => {
      const reason = aborted();
      request.destroy(reason instanceof Error ? reason : undefined);
      fail(reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    let answered = false;
    request.on("error", (error) => {
      // Sent again at once, on a new connection, and only once: the model's retries (retry.ts) would first
      // wait a jittered backoff (up to 0.5 s by default), or fail the turn when they are off. A run of
      // bench/new-sessions.ts had one turn fail with "socket hang up" from the scripted model, which closes
      // connections idle for 5 s.
      if (!resent && !answered && isClosedWhileIdle(request, error) && settle()) {
        send(url, agent, init, body, true).then(resolve, reject);
        return;
      }
      fail(error);
    });
    request.on("response", (response) => {
      answered = true;
      const responseHeaders = new Headers();
      const raw = response.rawHeaders;
      for (let index = 0; index + 1 < raw.length; index += 2)
        responseHeaders.append(raw[index]!, raw[index + 1]!);
      const status = response.statusCode ?? 0;
      const responseInit = { status, statusText: response.statusMessage ?? "", headers: responseHeaders };
      if (status === 204 || status === 205 || status === 304) {
        response.resume();
        finish(new Response(null, responseInit));
        return;
      }
      const decoded = decode(response);
      if (responseHeaders.get("content-type")?.startsWith("text/event-stream") === true) {
        // Streamed: from here the signal ends the body (the web stream errors with the reason).
        finish(new Response(Readable.toWeb(decoded) as ReadableStream<Uint8Array>, responseInit));
        const onStreamAbort = () => decoded.destroy(toError(aborted()));
        signal?.addEventListener("abort", onStreamAbort, { once: true });
        decoded.once("close", () => signal?.removeEventListener("abort", onStreamAbort));
        return;
      }
      const chunks: Buffer[] = [];
      decoded.on("data", (chunk: Buffer) => chunks.push(chunk));
      decoded.on("error", fail);
      response.on("error", fail);
      response.on("close", () => {
        if (!response.complete) fail(connectionClosed());
      });
      decoded.on("end", () => finish(new BufferedResponse(Buffer.concat(chunks), responseInit)));
    });
    request.end(body);
  });
}

/** UTF-8's byte order mark, which `text()` and `json()` drop as fetch's body decoding does. */
const BYTE_ORDER_MARK = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * A response whose body was read whole before it resolved: `text()`, `json()`, `arrayBuffer()` and `bytes()`
 * decode those bytes directly; `body` (and `blob()`, `formData()`, `clone()`) go through a web stream made on
 * first use, as a `Response` built over the bytes would. Why: building that stream for every response and
 * reading it back through web streams was ~6 % of the server's main thread in `bench/server-process.ts`'s
 * 100 × 10 phase (undici's `Response` constructor, `extractBody`, `consumeBody`), for a body already in memory.
 * Reading the body twice fails as it does with fetch.
 */
class BufferedResponse extends Response {
  readonly #bytes: Buffer;
  readonly #init: ResponseInit;
  #read = false;
  #streamed: Response | undefined;

  constructor(bytes: Buffer, init: ResponseInit) {
    super(null, init);
    this.#bytes = bytes;
    this.#init = init;
  }

  /** The same body as a `Response` over a web stream, made once. */
  #asStreamed(): Response {
    this.#streamed ??= new Response(new Uint8Array(this.#bytes), this.#init);
    return this.#streamed;
  }

  #take(): Buffer {
    if (this.bodyUsed) throw new TypeError("Body is unusable: Body has already been read");
    this.#read = true;
    return this.#bytes;
  }

  override get body(): ReadableStream<Uint8Array<ArrayBuffer>> | null {
    return this.#read ? null : this.#asStreamed().body;
  }

  override get bodyUsed(): boolean {
    return this.#read || (this.#streamed?.bodyUsed ?? false);
  }

  override async text(): Promise<string> {
    const bytes = this.#take();
    const start = bytes.subarray(0, 3).equals(BYTE_ORDER_MARK) ? 3 : 0;
    return bytes.toString("utf8", start);
  }

  override async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  override async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = this.#take();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  override async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await this.arrayBuffer());
  }

  override async blob(): Promise<Blob> {
    if (this.bodyUsed) throw new TypeError("Body is unusable: Body has already been read");
    return this.#asStreamed().blob();
  }

  override async formData(): Promise<FormData> {
    if (this.bodyUsed) throw new TypeError("Body is unusable: Body has already been read");
    return this.#asStreamed().formData();
  }

  override clone(): Response {
    if (this.bodyUsed) throw new TypeError("Response.clone: Body has already been consumed.");
    return new BufferedResponse(this.#bytes, this.#init);
  }
}

/** Headers as a plain record (lower-case names), from any `HeadersInit`. */
function headerRecord(init: HeadersInit | undefined): Record<string, string> {
  const record: Record<string, string> = {};
  if (init === undefined) return record;
  const headers = init instanceof Headers ? init : new Headers(init);
  headers.forEach((value, name) => {
    record[name] = value;
  });
  return record;
}

/** The body stream, decoded when the server compressed it. */
function decode(response: IncomingMessage): Readable {
  const encoding = response.headers["content-encoding"]?.trim().toLowerCase();
  const decoder =
    encoding === "gzip" || encoding === "x-gzip"
      ? createGunzip()
      : encoding === "deflate"
        ? createInflate()
        : encoding === "br"
          ? createBrotliDecompress()
          : undefined;
  if (decoder === undefined) return response;
  response.on("error", (error) => decoder.destroy(error));
  return response.pipe(decoder);
}

/** What a socket closed before the whole body arrived rejects with (a code the error classifier knows). */
function connectionClosed(): Error {
  return Object.assign(new Error("the connection closed before the whole response arrived"), {
    code: "ECONNRESET",
  });
}

function toError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}
