import fp from "fastify-plugin";
import { createMemoryServices, type MemoryServices } from "../memory-services.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Long-term memory: the Markdown files, the index and search, the summarizer queue. */
    memory: MemoryServices;
  }
}

/**
 * Memory files, the index (its watcher and start-up sync) and search. Closed after the sessions and the
 * summarizer, which write memory files up to their last moment: the index closes last of the services.
 */
export const memoryPlugin = fp(
  async (app) => {
    const { config, models } = app;
    const memory = await createMemoryServices({
      config,
      summarizerModel:
        models.chat && config.memory.summarizerModel
          ? models.named(config.memory.summarizerModel)
          : models.chat,
      tokenCounter: models.tokenCounter,
      logger: app.log,
    });
    app.decorate("memory", memory);
    app.addHook("onClose", async () => {
      await memory.stop(app.shutdown.deadlineMs());
      app.log.debug({ plugin: PLUGIN.memory }, "plugin closed");
    });
  },
  { name: PLUGIN.memory, fastify: "5.x", dependencies: [PLUGIN.config, PLUGIN.models] },
);
