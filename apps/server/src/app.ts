import type { ChannelStatus } from "@almanac/core";
import swagger from "@fastify/swagger";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import type { Logger as PinoLogger } from "pino";
import type { AlmanacConfig } from "./config/config-schema.js";
import { createEventBus, type EventBus } from "./events/event-bus.js";
import { installBearerAuth, PUBLIC_ROUTE, type RouteEntry } from "./http/auth.js";
import {
  createHttpErrorHandler,
  errorBody,
  handleClientError,
  installErrorHandler,
} from "./http/http-errors.js";
import type { MemoryServices } from "./memory-services.js";
import type { ServerMetrics } from "./metrics.js";
import { registerAdminRoutes, type ServerInfo } from "./routes/admin-routes.js";
import { registerConsole } from "./routes/console.js";
import { registerIndexRoutes } from "./routes/index-routes.js";
import { registerLiveRoutes } from "./routes/live-routes.js";
import { registerMemoryRoutes } from "./routes/memory-routes.js";
import { registerOpenAIRoutes } from "./routes/openai-routes.js";
import { registerSetupRoutes } from "./routes/setup-routes.js";
import { registerStatsRoutes, type StatsRoutesDependencies } from "./routes/stats-routes.js";
import { registerWebhookRoutes } from "./routes/webhook-routes.js";
import type { SessionManager } from "./runtime/session-manager.js";
import type { StorageHealth } from "./storage-health.js";

/** Everything the HTTP layer needs; built by `startServer`, or by tests directly. */
export interface AppDependencies {
  readonly config: AlmanacConfig;
  readonly logger: PinoLogger;
  readonly adminToken: string;
  readonly sessions: SessionManager;
  readonly metrics: ServerMetrics;
  readonly info: () => ServerInfo;
  readonly memory: MemoryServices;
  /** Platform webhooks to expose (Feishu in webhook mode). */
  readonly webhooks?: Parameters<typeof registerWebhookRoutes>[1];
  /** Status of every chat channel (for `GET /api/channels`). */
  readonly channels: () => ChannelStatus[];
  /** True once shutdown began: new requests get 503. */
  readonly isShuttingDown: () => boolean;
  /** The data directory's storage state: a full disk answers 507 `storage.full` and turns `/readyz` red. */
  readonly storage?: StorageHealth;
  /** What the chart routes (`/api/stats/*`, context history) read; the routes are absent without it. */
  readonly stats?: Pick<StatsRoutesDependencies, "journal" | "memorySampler">;
  /** The bus the services publish live changes to (`GET /api/events`); a private, silent one when absent. */
  readonly events?: EventBus;
}

declare module "fastify" {
  interface FastifyInstance {
    /** Every registered route with whether it is public (reachable without the admin token). */
    routeTable(): readonly RouteEntry[];
  }
}

/** Builds the fastify app (not listening), so tests can `inject()` or listen on a random port. */
export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const errorOptions = {
    isShuttingDown: deps.isShuttingDown,
    ...(deps.storage ? { storageError: deps.storage.classify } : {}),
  };
  const app: FastifyInstance = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: deps.config.server.bodyLimitBytes,
    // Our own onRequest hook answers 503 in the documented shape from the moment shutdown begins.
    return503OnClosing: false,
    // Session keys in `/api/sessions/{key}` can be a few hundred characters (find-my-way's default is 100).
    routerOptions: { maxParamLength: 2048 },
    frameworkErrors: createHttpErrorHandler(errorOptions),
    clientErrorHandler: handleClientError,
  });
  // Deny by default: installed before any route, so every route is in the table and behind the hook.
  const auth = installBearerAuth(app, { token: deps.adminToken });
  app.decorate("routeTable", auth.routes);
  installErrorHandler(app, { ...errorOptions, notFoundGuard: auth.requireToken });
  // Empty JSON bodies (DELETE/POST without a body but with the header) are accepted as "no body";
  // everything else goes through fastify's default parser (with prototype-poisoning protection).
  const defaultJsonParser = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.trim() === "") return done(null, undefined);
    defaultJsonParser(request, text, done);
  });
  await app.register(swagger, {
    openapi: {
      info: {
        title: "Almanac",
        version: deps.info().version,
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
  app.addHook("onRequest", async (_request, reply) => {
    if (deps.isShuttingDown()) {
      return reply
        .status(503)
        .send(errorBody("server.shutting_down", "The server is shutting down.", "server_error"));
    }
  });
  // A keep-alive connection that outlives its last reply would hold `app.close()` open forever (a turn cut
  // short by the shutdown deadline answers after the server stopped accepting connections).
  app.addHook("onSend", async (_request, reply) => {
    if (deps.isShuttingDown()) reply.header("connection", "close");
  });

  app.get(
    "/healthz",
    {
      ...PUBLIC_ROUTE,
      schema: { tags: ["operations"], summary: "Liveness: the process answers (no token)" },
    },
    async () => ({ status: "ok" }),
  );
  const readinessSummary = "Readiness: model, storage and index checks; 503 when not ready (no token)";
  app.get(
    "/readyz",
    { ...PUBLIC_ROUTE, schema: { tags: ["operations"], summary: readinessSummary } },
    async (_request, reply) => {
      const info = deps.info();
      const index = await deps.memory.indexStatus();
      const indexOk = index.lastError === undefined;
      const storage = (await deps.storage?.check()) ?? { ok: true };
      const ready = info.model.configured && indexOk && storage.ok;
      const channels = deps.channels().filter((channel) => channel.state !== "disabled");
      return reply.status(ready ? 200 : 503).send({
        ready,
        checks: {
          storage,
          index: indexOk
            ? {
                ok: true,
                backend: index.backend,
                state: index.state,
                ...(index.state === "rebuilding" ? { repair: index.repair } : {}),
              }
            : {
                ok: false,
                backend: index.backend,
                error: index.lastError,
                hint: "See GET /api/memory/index and the log.",
              },
          // Channels are reported, not required: a platform outage must not take the API out of rotation.
          channels: channels.map((channel) => ({ channel: channel.channel, state: channel.state })),
          model: info.model.configured
            ? { ok: true, name: info.model.name }
            : {
                ok: false,
                missing: info.model.missing,
                hint: `Set ${info.model.missing.join(" and ")} to chat.`,
              },
        },
      });
    },
  );
  app.get(
    "/metrics",
    { schema: { tags: ["operations"], summary: "Prometheus metrics" } },
    async (_request, reply) => {
      reply.header("content-type", deps.metrics.registry.contentType);
      return deps.metrics.registry.metrics();
    },
  );
  app.get(
    "/api/openapi.json",
    { schema: { tags: ["operations"], summary: "This OpenAPI document" } },
    async () => app.swagger(),
  );

  app.get(
    "/api/channels",
    { schema: { tags: ["admin"], summary: "Chat channels and their connection state" } },
    async () => ({
      channels: deps.channels(),
    }),
  );
  registerOpenAIRoutes(app, deps.sessions);
  registerAdminRoutes(app, deps.sessions, deps.info);
  registerMemoryRoutes(app, deps.memory);
  await registerWebhookRoutes(app, deps.webhooks ?? {});
  await registerIndexRoutes(app, deps.memory);
  await registerConsole(app, { sessions: deps.sessions });
  registerSetupRoutes(app, { config: deps.config, memory: deps.memory });
  if (deps.stats) registerStatsRoutes(app, { ...deps.stats, sessions: deps.sessions, memory: deps.memory });
  const queue = deps.memory.queue;
  registerLiveRoutes(app, {
    bus: deps.events ?? createEventBus(),
    sessions: deps.sessions,
    sources: {
      ...(queue ? { queue: () => queue.stats() } : {}),
      index: () => deps.memory.indexStatus(),
      channels: deps.channels,
    },
  });
  return app;
}
