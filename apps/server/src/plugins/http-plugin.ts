import helmet from "@fastify/helmet";
import fp from "fastify-plugin";
import { installBearerAuth, type RouteEntry } from "../http/auth.js";
import { errorBody, installErrorHandler, installPathLimit } from "../http/http-errors.js";
import { installOpenApiDocument } from "../http/openapi-document.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Every registered route with whether it is public (reachable without the admin token). */
    routeTable(): readonly RouteEntry[];
  }
}

/**
 * Security headers on every response. The console holds the admin token in the page, so it may only run its
 * own scripts (no inline script, no eval) and may not be framed; nothing is sent to other sites as a referrer.
 * HSTS and upgrade-insecure-requests are left to whoever terminates TLS: Almanac is often reached over plain
 * HTTP on a LAN, where they would break it.
 */
const SECURITY_HEADERS = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      // Preact sets `style` attributes (bars, chart sizes); no style sheet comes from elsewhere.
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", "data:", "blob:"],
      // The console plays voice messages it fetched with the token, from blob: URLs (never from another site).
      mediaSrc: ["'self'", "blob:"],
      connectSrc: ["'self'"],
      fontSrc: ["'self'"],
      objectSrc: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
    },
  },
  referrerPolicy: { policy: "no-referrer" as const },
  frameguard: { action: "deny" as const },
  strictTransportSecurity: false,
  crossOriginEmbedderPolicy: false,
} as const;

/** Routes polled by machines, logged at debug. */
const QUIET_ROUTES: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * What every route shares: deny-by-default bearer auth, the one error handler, the JSON parser, the OpenAPI
 * document, and the shutdown gate. Registered before any route, so every route is in the table and behind
 * the auth hook; its `preClose` hook is the first one to run, so new requests get 503 from then on.
 */
export const httpPlugin = fp(
  async (app) => {
    const errorOptions = {
      isShuttingDown: () => app.shutdown.isShuttingDown(),
      storageError: (error: unknown) => app.storage.classify(error),
    };
    await app.register(helmet, SECURITY_HEADERS);
    const auth = installBearerAuth(app, { token: app.adminToken });
    app.decorate("routeTable", auth.routes);
    installErrorHandler(app, { ...errorOptions, notFoundGuard: auth.requireToken });
    installPathLimit(app);
    // Empty JSON bodies (DELETE/POST without a body but with the header) are accepted as "no body";
    // everything else goes through fastify's default parser (with prototype-poisoning protection).
    const defaultJsonParser = app.getDefaultJsonParser("error", "error");
    app.removeContentTypeParser("application/json");
    app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
      const text = typeof body === "string" ? body : body.toString("utf8");
      if (text.trim() === "") return done(null, undefined);
      defaultJsonParser(request, text, done);
    });
    installOpenApiDocument(app, {
      openapi: {
        info: {
          title: "Almanac",
          version: app.almanacVersion,
          description: "Admin REST and OpenAI-compatible API",
        },
        components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
        security: [{ bearer: [] }],
      },
      // Public routes (health, readiness, webhooks) say so, decided on the same route flag the auth hook reads;
      // a wildcard gets a named parameter (`{path}`) instead of swagger's `{*}`.
      transform: ({ schema, url, route }) => ({
        schema: route.config?.public === true ? { ...schema, security: [] } : schema,
        url: url.endsWith("*") ? `${url.slice(0, -1)}:path` : url,
      }),
    });
    // One line per request when it is answered: method, path (query values redacted by the serializer), status,
    // time. Probes and scrapes (health, readiness, metrics: every few seconds from Docker or Prometheus) go at
    // debug, so an info log shows what people and platforms did.
    app.addHook("onResponse", async (request, reply) => {
      const level = QUIET_ROUTES.has(request.routeOptions.url ?? "") ? "debug" : "info";
      request.log[level](
        {
          req: request,
          res: { statusCode: reply.statusCode },
          responseTime: Math.round(reply.elapsedTime * 10) / 10,
        },
        "request completed",
      );
    });
    app.addHook("onRequest", async (_request, reply) => {
      if (app.shutdown.isShuttingDown()) {
        return reply
          .status(503)
          .send(errorBody("server.shutting_down", "The server is shutting down.", "server_error"));
      }
    });
    // A keep-alive connection that outlives its last reply would hold `app.close()` open forever (a turn cut
    // short by the shutdown deadline answers after the server stopped accepting connections).
    app.addHook("onSend", async (_request, reply) => {
      if (app.shutdown.isShuttingDown()) reply.header("connection", "close");
    });
    app.addHook("preClose", async () => {
      // A start that failed (port taken) began the shutdown itself, with no deadline and nothing to announce.
      if (app.shutdown.isShuttingDown()) return;
      app.shutdown.begin();
      app.log.info({ deadlineMs: app.shutdown.deadlineMs() }, "shutting down: finishing running turns");
    });
  },
  {
    name: PLUGIN.http,
    fastify: "5.x",
    dependencies: [PLUGIN.config],
    decorators: { fastify: ["adminToken", "storage", "shutdown", "almanacVersion"] },
  },
);
