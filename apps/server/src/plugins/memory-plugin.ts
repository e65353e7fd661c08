import { join } from "node:path";
import { toolOutputTokenBudget } from "@almanac/compaction";
import { type Logger, UserError } from "@almanac/core";
import { createOpenAIEmbedder } from "@almanac/llm";
import { createMemory, type Memory, type MemoryIndexChoice } from "@almanac/memory";
import fp from "fastify-plugin";
import { compactionWindow } from "../config/compaction-window.js";
import type { AlmanacConfig } from "../config/config-schema.js";
import { proxySettingsOf } from "../config/load-config.js";
import { resolveMemoryScope } from "../memory-scope.js";
import { aTurnAfterReady } from "./after-ready.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Long-term memory: the Markdown files, the index and search, the summarizer queue. */
    memory: Memory;
  }
}

/**
 * Memory files, the index (its watcher and start-up sync) and search. Closed after the sessions and the
 * summarizer, which write memory files up to their last moment: the index closes last of the services.
 */
export const memoryPlugin = fp(
  async (app) => {
    const { config, models } = app;
    const { embedding } = config;
    // The watcher's first walk of the workspace and the start-up sync begin once the server listens, so they do
    // not delay the first answer (search answers from the index as it was meanwhile).
    const startIndexing = aTurnAfterReady(app);
    const summarizerModel =
      models.chat && config.memory.summarizerModel
        ? models.named(config.memory.summarizerModel)
        : models.chat;
    const memory = await createMemory({
      workspace: join(config.home, "workspace"),
      stateDir: join(config.home, "state"),
      timeZone: config.memory.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
      index: indexChoice(config, app.log),
      ...(embedding.baseUrl && embedding.model
        ? {
            embedder: createOpenAIEmbedder({
              baseURL: embedding.baseUrl,
              apiKey: embedding.apiKey ?? "",
              model: embedding.model,
              proxy: proxySettingsOf(config),
              ...(embedding.dimensions === undefined ? {} : { dimensions: embedding.dimensions }),
              logger: app.log,
            }),
          }
        : {}),
      ...(summarizerModel
        ? {
            summarizer: {
              model: summarizerModel,
              contextWindow: config.model.contextWindow,
              maxOutputTokens: config.model.maxOutputTokens,
              maxAttempts: config.memory.summarizerMaxAttempts,
            },
          }
        : {}),
      contextTokens: config.memory.contextTokens,
      // Sized so a search result reaches the model whole instead of being cut as a giant output.
      toolOutputTokens: toolOutputTokenBudget(compactionWindow(config)),
      scopeOf: (sessionKey) => resolveMemoryScope(sessionKey, config),
      tokenCounter: models.tokenCounter,
      logger: app.log,
      startIndexing,
    });
    app.decorate("memory", memory);
    app.addHook("onClose", async () => {
      await memory.stop(app.shutdown.deadlineMs());
      app.log.debug({ plugin: PLUGIN.memory }, "plugin closed");
    });
  },
  { name: PLUGIN.memory, fastify: "5.x", dependencies: [PLUGIN.config, PLUGIN.models] },
);

/** The configured index: the embedded SQLite file, or Qdrant once it has what it needs. */
function indexChoice(config: AlmanacConfig, logger: Logger): MemoryIndexChoice {
  const { index, embedding } = config;
  const sqlite: MemoryIndexChoice = {
    backend: "sqlite",
    path: join(config.home, "state", "index.sqlite"),
    ...(embedding.dimensions === undefined ? {} : { dimensions: embedding.dimensions }),
  };
  if (index.backend !== "qdrant") return sqlite;
  if (embedding.baseUrl === undefined || embedding.dimensions === undefined) {
    // A first `docker compose up` without an embedding model must still start: Qdrant needs the vector
    // size up front, so until the embedding settings exist the embedded index does the job.
    logger.child({ component: "memory" }).warn(
      {
        missing: ["ALMANAC_EMBEDDING_BASE_URL", "ALMANAC_EMBEDDING_MODEL", "ALMANAC_EMBEDDING_DIMENSIONS"],
      },
      "ALMANAC_INDEX_BACKEND=qdrant needs an embedding model and its dimensions; using the embedded SQLite index until they are set",
    );
    return sqlite;
  }
  if (!index.qdrantUrl) {
    throw new UserError(
      "config.invalid",
      "ALMANAC_INDEX_BACKEND=qdrant needs ALMANAC_QDRANT_URL (e.g. http://qdrant:6333).",
    );
  }
  return {
    backend: "qdrant",
    url: index.qdrantUrl,
    ...(index.qdrantApiKey ? { apiKey: index.qdrantApiKey } : {}),
    collection: index.qdrantCollection,
    dimensions: embedding.dimensions,
  };
}
