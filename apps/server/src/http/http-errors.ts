import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { type ErrorCode, isAlmanacError } from "@almanac/core";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { httpStatusOf } from "../errors/error-codes.js";

/** OpenAI-style error body, used by /v1 and /api alike so every client can parse it. */
export interface ErrorBody {
  error: { message: string; type: string; code: string };
}

/** Builds an error body. */
export function errorBody(code: ErrorCode, message: string, type = "invalid_request_error"): ErrorBody {
  return { error: { message, type, code } };
}

function typeFor(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** Fastify's own errors (`FST_ERR_*`) as Almanac codes: clients never see a framework code. */
const FASTIFY_ERRORS: Readonly<Record<string, { readonly code: ErrorCode; readonly message: string }>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: {
    code: "request.too_large",
    message: "Request body is larger than the server accepts.",
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: "request.malformed_json", message: "Malformed JSON body." },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: "request.malformed_json", message: "The JSON body is empty." },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: "request.unsupported_media_type",
    message: "Unsupported content type; send the body as application/json.",
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    code: "request.invalid",
    message: "The body's size does not match its Content-Length.",
  },
  FST_ERR_BAD_URL: { code: "request.bad_url", message: "The URL is not valid (bad percent-encoding)." },
  FST_ERR_MAX_PARAM_LENGTH: { code: "request.uri_too_long", message: "A path parameter is too long." },
};

/** The Almanac code for any other 4xx a framework or plugin raised, by its status. */
const CODE_BY_CLIENT_STATUS: Readonly<Record<number, ErrorCode>> = {
  403: "request.forbidden",
  404: "route.not_found",
  405: "request.method_not_allowed",
  408: "request.timeout",
  413: "request.too_large",
  414: "request.uri_too_long",
  415: "request.unsupported_media_type",
  431: "request.headers_too_large",
};

/** True when `error`, or an error in its `cause` chain, has the given Almanac code. */
function causedBy(error: unknown, code: ErrorCode): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth += 1) {
    if (isAlmanacError(current) && current.code === code) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** What the error handler needs to know about the server. */
export interface HttpErrorOptions {
  /** True once shutdown began: a turn cut short then is `503 server.shutting_down`, not the client's doing. */
  readonly isShuttingDown?: () => boolean;
  /** The storage error (`storage.full`, 507) for a write that failed on a full or read-only disk, if it is one. */
  readonly storageError?: (error: unknown) => Error | undefined;
}

/** A reply the error handler sends: a status and a body in the documented shape. */
interface ErrorReply {
  readonly status: number;
  readonly body: ErrorBody;
  /** The error goes to the log (server faults only): with its stack, or as one warning line. */
  readonly log: boolean | "line";
}

function classify(thrown: FastifyError | Error, options: HttpErrorOptions): ErrorReply {
  const error = options.storageError?.(thrown) ?? thrown;
  const reply = (
    status: number,
    code: ErrorCode,
    message: string,
    log: boolean | "line" = false,
  ): ErrorReply => ({
    status,
    body: errorBody(code, message, typeFor(status)),
    log,
  });
  if (isAlmanacError(error)) {
    if (
      error.code === "agent.aborted" &&
      (causedBy(error, "server.shutting_down") || options.isShuttingDown?.() === true)
    )
      return reply(503, "server.shutting_down", "The server is shutting down; this reply was stopped.");
    const status = httpStatusOf(error.code, error.category);
    const message = error.category === "internal" ? "Internal error; see the server log." : error.message;
    // A storage failure is the operator's to fix and says how: one line, not a stack per request.
    return reply(status, error.code, message, error.code.startsWith("storage.") ? "line" : status >= 500);
  }
  const fastifyError = error as FastifyError;
  const known = fastifyError.code === undefined ? undefined : FASTIFY_ERRORS[fastifyError.code];
  if (known) return reply(httpStatusOf(known.code, "user"), known.code, known.message);
  if (fastifyError.validation) return reply(400, "request.invalid", `Invalid request: ${error.message}`);
  if (error instanceof SyntaxError)
    return reply(400, "request.malformed_json", `Malformed JSON body: ${error.message}`);
  const status = fastifyError.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    const code = CODE_BY_CLIENT_STATUS[status] ?? "request.invalid";
    return reply(status, code, STATUS_CODES[status] ?? "Bad request.");
  }
  return reply(500, "internal.error", "Internal error; see the server log.", true);
}

/**
 * The one error handler: every thrown error becomes a status and a body in the documented shape; internal
 * details never reach the client. Also used as fastify's `frameworkErrors` handler (bad URLs, long params).
 */
export function createHttpErrorHandler(
  options: HttpErrorOptions = {},
): (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => FastifyReply {
  return (error, request, reply) => {
    const answer = classify(error, options);
    if (answer.log === "line") request.log.warn({ code: answer.body.error.code }, answer.body.error.message);
    else if (answer.log) request.log.error({ err: error }, "request failed");
    return reply.status(answer.status).send(answer.body);
  };
}

/**
 * fastify's `clientErrorHandler`: a request Node could not even parse (bad HTTP, headers too large) gets a
 * minimal response in the documented shape before the socket closes.
 */
export function handleClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, message]: [number, ErrorCode, string] =
    error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "request.timeout", "The request took too long to arrive."]
      : error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "request.headers_too_large", "The request headers are too large."]
        : [400, "request.malformed", "The request is not valid HTTP."];
  const body = JSON.stringify(errorBody(code, message));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * Installs the error handler and the not-found handler. Unknown paths are guarded like any route
 * (`notFoundGuard`, the auth hook): without the token they get 401, not a 404 that confirms what exists.
 */
/** Longest path segment (a session key, a file name) any route takes; fastify's router gets the same limit. */
export const MAX_PATH_SEGMENT_CHARS = 2048;

function decodedLength(segment: string): number {
  if (segment.length <= MAX_PATH_SEGMENT_CHARS) return segment.length;
  try {
    return decodeURIComponent(segment).length;
  } catch {
    return segment.length;
  }
}

/**
 * `414 request.uri_too_long` for a path with a segment over {@link MAX_PATH_SEGMENT_CHARS}, whatever the method
 * and whichever route would match: the router alone refused only some (a wildcard or the console's fallback
 * took the rest, and echoed them).
 */
export function installPathLimit(app: FastifyInstance): void {
  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    if (path.length <= MAX_PATH_SEGMENT_CHARS) return;
    // Counted as the router counts a parameter: decoded (a name in Chinese is three times longer encoded).
    if (!path.split("/").some((segment) => decodedLength(segment) > MAX_PATH_SEGMENT_CHARS)) return;
    return reply
      .status(414)
      .send(errorBody("request.uri_too_long", "A path parameter is too long.", "invalid_request_error"));
  });
}

export function installErrorHandler(
  app: FastifyInstance,
  options: HttpErrorOptions & {
    readonly notFoundGuard?: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  } = {},
): void {
  app.setErrorHandler(createHttpErrorHandler(options));
  const notFound = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split("?")[0] ?? "";
    // Named so a person sees what was asked, but never echoed at length.
    const shown = path.length > 120 ? `${path.slice(0, 120)}… (${path.length} characters)` : path;
    return reply.status(404).send(errorBody("route.not_found", `No route ${request.method} ${shown}`));
  };
  app.setNotFoundHandler(options.notFoundGuard ? { preHandler: options.notFoundGuard } : {}, notFound);
}
