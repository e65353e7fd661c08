import { validateHeaderName, validateHeaderValue } from "node:http";
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
  end(): void;
}

/**
 * Streams over `reply` lazily, so that a failure before the first event can still be answered with a normal
 * status and JSON error body by the app's error handler.
 */
export function createLazyEventStream(
  reply: FastifyReply,
  headers: Record<string, string> = {},
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
    end() {
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
