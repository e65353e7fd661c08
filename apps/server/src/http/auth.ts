import { hash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, RouteOptions } from "fastify";
import { errorBody } from "./http-errors.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** True on the few routes reachable without the admin token; every other route requires it. */
    public?: boolean;
  }
}

/** Route options that make a route reachable without the admin token (health, readiness, console files). */
export const PUBLIC_ROUTE = { config: { public: true } } as const;

/** One registered route as the auth layer sees it. */
export interface RouteEntry {
  readonly method: string;
  readonly url: string;
  readonly public: boolean;
}

function digest(text: string): Buffer {
  return hash("sha256", text, "buffer");
}

/** The expected token's digest, made once (every request is checked against the same token). */
let expectedDigest: { readonly token: string; readonly digest: Buffer } | undefined;

/** Constant-time comparison of a presented bearer token with the expected one. */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  if (expectedDigest?.token !== expected) expectedDigest = { token: expected, digest: digest(expected) };
  return timingSafeEqual(digest(presented), expectedDigest.digest);
}

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== "string") return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1];
}

/**
 * Marks every route registered in `scope` (an encapsulated plugin) public: for plugins that register their own
 * routes and take no route config, like `@fastify/static`.
 */
export function markRoutesPublic(scope: FastifyInstance): void {
  scope.addHook("onRoute", (route) => {
    route.config = { ...route.config, public: true };
  });
}

/** The auth layer installed on an app: its hook (also used by the not-found handler) and the route table. */
export interface BearerAuth {
  /** Answers 401 unless the matched route is public or the request carries the admin token. */
  readonly requireToken: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /** Every route registered after installation, with whether it is public (for logs and tests). */
  readonly routes: () => readonly RouteEntry[];
}

/**
 * Deny by default: every route requires `Authorization: Bearer <token>` unless its route options say
 * `config: { public: true }`. The decision is made on the route the router matched (its config), never on the
 * raw URL, so no spelling of a path (percent-encoding, dot segments, case) can reach a protected handler.
 * Unknown paths are protected too: without the token they get the same 401, so they reveal nothing.
 * Install before any route is registered: the route table is collected from `onRoute`.
 */
export function installBearerAuth(app: FastifyInstance, options: { token: string }): BearerAuth {
  // Kept as registered and read late: hooks of inner scopes (markRoutesPublic) run after this one.
  const registered: RouteOptions[] = [];
  app.addHook("onRoute", (route) => {
    registered.push(route);
  });
  const routes = (): RouteEntry[] =>
    registered.flatMap((route) =>
      (Array.isArray(route.method) ? route.method : [route.method]).map((method: HTTPMethods) => ({
        method,
        url: route.url,
        public: route.config?.public === true,
      })),
    );
  const requireToken = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config.public === true) return;
    if (tokenMatches(bearer(request), options.token)) return;
    return reply
      .status(401)
      .header("www-authenticate", 'Bearer realm="almanac"')
      .send(errorBody("auth.unauthorized", "Missing or invalid bearer token.", "authentication_error"));
  };
  app.addHook("onRequest", requireToken);
  return { requireToken, routes };
}
