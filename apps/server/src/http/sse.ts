import { type ServerResponse, validateHeaderName, validateHeaderValue } from "node:http";
import { UserError } from "@almanac/core";
import type { FastifyReply } from "fastify";

/** A server-sent-events writer that sends its headers only with the first event. */
export interface LazyEventStream {
  /** Writes one `data:` event (JSON); the first call takes over the response and sends the headers. */
  send(data: unknown): void;
  /** Writes a raw `data:` line (e.g. `[DONE]`). */
  sendRaw(line: string): void;
  /** True once the first event went out: errors must then be reported inside the stream. */
  readonly started: boolean;
  /**
   * Ends the stream, with `trailers` after its last event when given (their names must be among the
   * `trailerNames` the stream was created with: the `Trailer` header announces them with the first event).
   */
  end(trailers?: Record<string, string>): void;
}

/**
 * Streams over `reply` lazily, so that a failure before the first event can still be answered with a normal
 * status and JSON error body by the app's error handler.
 */
export function createLazyEventStream(
  reply: FastifyReply,
  headers: Record<string, string> = {},
  trailerNames: readonly string[] = [],
): LazyEventStream {
  // Checked now, before the caller runs its turn: a header refused at the first event would drop the stream.
  for (const [name, value] of Object.entries(headers)) {
    validateHeaderName(name);
    validateHeaderValue(name, value);
  }
  let started = false;
  const start = () => {
    if (started) return;
    reply.hijack();
    reply.raw.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      ...(trailerNames.length > 0 ? { trailer: trailerNames.join(", ") } : {}),
      ...headers,
    });
    started = true;
  };
  return {
    send(data) {
      start();
      reply.raw.write(`data: ${JSON.stringify(data)}\n\n`);
    },
    sendRaw(line) {
      start();
      reply.raw.write(`data: ${line}\n\n`);
    },
    get started() {
      return started;
    },
    end(trailers) {
      // Sent only in a chunked response (HTTP/1.1); an HTTP/1.0 client's stream just ends.
      if (started && trailers !== undefined) reply.raw.addTrailers(trailers);
      reply.raw.end();
    },
  };
}

/**
 * A signal that aborts when the client goes away before the response finished. Its reason is a
 * `request.client_closed` error, so an aborted turn can tell a client that left from a server shutdown
 * (whose reason is `server.shutting_down`).
 */
export function abortWhenClientLeaves(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableFinished)
      controller.abort(
        new UserError("request.client_closed", "The client closed the connection before the reply was done."),
      );
  });
  return controller.signal;
}

/** Options of {@link openEventStream}. */
export interface EventStreamOptions {
  /** A comment line this often keeps proxies and load balancers from closing an idle stream. */
  readonly heartbeatMs: number;
  /**
   * Bytes the socket may hold unsent before the client counts as too slow: the stream then ends with a
   * `close` event (`reason: "slow-client"`) instead of growing the server's memory. The client reconnects
   * and starts again from a fresh snapshot.
   */
  readonly maxBufferedBytes: number;
}

/** Why a long-lived event stream ended, as its final `close` event says. */
export type EventStreamCloseReason = "slow-client" | "server-shutdown" | "error";

/** A long-lived server-sent-events response (`event:`, `id:` and `data:` lines). */
export interface EventStream {
  /** Writes one named event with JSON data; ignored once the stream is closed. */
  send(event: string, data: unknown, id?: number): void;
  /** Ends the stream with a final `close` event giving the reason. */
  close(reason: EventStreamCloseReason): void;
  readonly closed: boolean;
  /** Runs once when the stream ends, whoever ended it (the client leaving included). */
  onClose(callback: () => void): void;
}

/** Takes over `response` (its headers go out at once) as an {@link EventStream} with heartbeats. */
export function openEventStream(response: ServerResponse, options: EventStreamOptions): EventStream {
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    // nginx buffers proxied responses unless told not to.
    "x-accel-buffering": "no",
  });
  let closed = false;
  const callbacks: Array<() => void> = [];
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    for (const callback of callbacks.splice(0)) callback();
  };
  response.on("close", finish);
  const write = (frame: string) => {
    if (closed) return;
    if (response.writableLength > options.maxBufferedBytes) {
      stream.close("slow-client");
      return;
    }
    response.write(frame);
  };
  const heartbeat = setInterval(() => write(": heartbeat\n\n"), options.heartbeatMs);
  heartbeat.unref();
  const stream: EventStream = {
    send(event, data, id) {
      write(`${id === undefined ? "" : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    close(reason) {
      if (closed) return;
      response.end(`event: close\ndata: ${JSON.stringify({ type: "close", reason })}\n\n`);
      finish();
      // A client that reads nothing would keep the socket (and its buffer) forever: cut it after a grace period.
      if (reason === "slow-client") setTimeout(() => response.destroy(), 5_000).unref();
    },
    get closed() {
      return closed;
    },
    onClose(callback) {
      if (closed) callback();
      else callbacks.push(callback);
    },
  };
  // Flushes the headers now: a client waits for them before it sees the stream as open.
  response.write(": connected\n\n");
  return stream;
}
