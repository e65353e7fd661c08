import { isAlmanacError } from "@almanac/core";
import type { FastifyError, FastifyInstance } from "fastify";

/**
 * The one registry of error codes the HTTP API answers with, and their status.
 * Codes not listed fall back by category: user → 400, provider → 502, internal → 500.
 */
export const HTTP_STATUS_BY_CODE: Readonly<Record<string, number>> = {
  "auth.unauthorized": 401,
  "request.invalid": 400,
  "request.malformed_json": 400,
  "request.too_large": 413,
  "message.invalid": 400,
  "message.too_long": 413,
  "session.not_found": 404,
  "session.key_invalid": 400,
  "session.busy": 429,
  "model.not_configured": 503,
  "server.shutting_down": 503,
  "llm.timeout": 504,
  "turn.timeout": 504,
  "agent.aborted": 499,
  "llm.context_length": 502,
  "route.not_found": 404,
  "home.locked": 409,
  "memory.path_refused": 400,
  "memory.not_found": 404,
  "memory.conflict": 409,
  "memory.shrink_refused": 409,
  "summarizer.job_not_found": 404,
  "summarizer.job_not_parked": 409,
  "storage.full": 507,
  "storage.read_only": 507,
};

/** OpenAI-style error body, used by /v1 and /api alike so every client can parse it. */
export interface ErrorBody {
  error: { message: string; type: string; code: string };
}

/** Builds an error body. */
export function errorBody(code: string, message: string, type = "invalid_request_error"): ErrorBody {
  return { error: { message, type, code } };
}

function typeFor(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** Maps every thrown error to a status and a body; internal details never reach the client. */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (isAlmanacError(error)) {
      const fallback = error.category === "user" ? 400 : error.category === "provider" ? 502 : 500;
      const status = HTTP_STATUS_BY_CODE[error.code] ?? fallback;
      if (status >= 500) request.log.error({ err: error }, "request failed");
      const message = error.category === "internal" ? "Internal error; see the server log." : error.message;
      return reply.status(status).send(errorBody(error.code, message, typeFor(status)));
    }
    const fastifyError = error as FastifyError;
    if (fastifyError.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return reply
        .status(413)
        .send(errorBody("request.too_large", "Request body is larger than the server accepts."));
    }
    if (fastifyError.code === "FST_ERR_CTP_INVALID_JSON_BODY" || error instanceof SyntaxError) {
      return reply
        .status(400)
        .send(errorBody("request.malformed_json", `Malformed JSON body: ${error.message}`));
    }
    if (fastifyError.validation) {
      return reply.status(400).send(errorBody("request.invalid", `Invalid request: ${error.message}`));
    }
    if (fastifyError.statusCode !== undefined && fastifyError.statusCode < 500) {
      return reply
        .status(fastifyError.statusCode)
        .send(
          errorBody(fastifyError.code ?? "request.invalid", error.message, typeFor(fastifyError.statusCode)),
        );
    }
    request.log.error({ err: error }, "unhandled error");
    return reply
      .status(500)
      .send(errorBody("internal", "Internal error; see the server log.", "server_error"));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.status(404).send(errorBody("route.not_found", `No route ${request.method} ${request.url}`)),
  );
}
