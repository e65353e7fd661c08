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

/** A signal that aborts when the client goes away before the response finished. */
export function abortWhenClientLeaves(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
