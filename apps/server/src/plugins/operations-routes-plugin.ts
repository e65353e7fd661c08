import fp from "fastify-plugin";
import { redactConfig } from "../config/load-config.js";
import { PUBLIC_ROUTE } from "../http/auth.js";
import type { ServerInfo } from "../routes/admin-routes.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Version, uptime, model, storage and the redacted configuration (`GET /api/info`, `/readyz`). */
    serverInfo(): ServerInfo;
  }
}

/** Liveness, readiness, metrics, the OpenAPI document and the channel states. */
export const operationsRoutesPlugin = fp(
  async (app) => {
    const { config, models, memory, storage, channels } = app;
    const startedAt = Date.now();
    const serverInfo = (): ServerInfo => ({
      version: app.almanacVersion,
      startedAt,
      model: {
        configured: models.chat !== undefined,
        ...(config.model.name === undefined ? {} : { name: config.model.name }),
        missing: [...models.missing],
      },
      tokenCounter: models.tokenCounter.method,
      storage: storage.status(),
      config: redactConfig(config),
    });
    app.decorate("serverInfo", serverInfo);

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
        const info = serverInfo();
        const index = await memory.indexStatus();
        const indexOk = index.lastError === undefined;
        const storageStatus = await storage.check();
        const ready = info.model.configured && indexOk && storageStatus.ok;
        const enabled = channels.statuses().filter((channel) => channel.state !== "disabled");
        return reply.status(ready ? 200 : 503).send({
          ready,
          checks: {
            storage: storageStatus,
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
            channels: enabled.map((channel) => ({ channel: channel.channel, state: channel.state })),
            // So are MCP servers: a server that is down costs its tools, never the assistant.
            mcpServers: (app.tools.mcp?.statuses() ?? []).map((server) => ({
              name: server.name,
              state: server.state,
              ...(server.lastError === undefined ? {} : { lastError: server.lastError }),
            })),
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
        const { contentType, text } = await app.metrics.scrape();
        reply.header("content-type", contentType);
        return text;
      },
    );
    app.get(
      "/api/openapi.json",
      { schema: { tags: ["operations"], summary: "This OpenAPI document" } },
      async () => app.openApiDocument(),
    );
    app.get(
      "/api/channels",
      { schema: { tags: ["admin"], summary: "Chat channels and their connection state" } },
      async () => ({ channels: channels.statuses() }),
    );
  },
  {
    name: PLUGIN.operationsRoutes,
    fastify: "5.x",
    dependencies: [
      PLUGIN.config,
      PLUGIN.http,
      PLUGIN.telemetry,
      PLUGIN.models,
      PLUGIN.memory,
      PLUGIN.tools,
      PLUGIN.channels,
    ],
  },
);
