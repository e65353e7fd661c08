import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { errorBody } from "./http-errors.js";

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/** Constant-time comparison of a presented bearer token with the expected one. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(digest(presented), digest(expected));
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== "string") return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1];
}

/**
 * Requires `Authorization: Bearer <token>` on every route under the given prefixes.
 * A wrong or missing token gets the same 401 with no detail.
 */
export function installBearerAuth(
  app: FastifyInstance,
  options: { token: string; prefixes: readonly string[] },
): void {
  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    if (!options.prefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) return;
    if (tokenMatches(bearer(request), options.token)) return;
    return reply
      .status(401)
      .header("www-authenticate", 'Bearer realm="almanac"')
      .send(errorBody("auth.unauthorized", "Missing or invalid bearer token.", "authentication_error"));
  });
}
