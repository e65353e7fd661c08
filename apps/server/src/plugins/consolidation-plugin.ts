import { join } from "node:path";
import { Consolidator } from "@almanac/consolidation";
import { describeError } from "@almanac/core";
import { normalizePhrase } from "@almanac/memory-files";
import fp from "fastify-plugin";
import { aTurnAfterReady } from "./after-ready.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Consolidation of MEMORY.md from the daily logs (absent without a model: nothing to consolidate with). */
    consolidation: Consolidator | undefined;
  }
}

/**
 * Consolidation: nightly (`memory.consolidateAt`, in the memory time zone) and on request, a run folds the owner's
 * daily logs into MEMORY.md, kept within the memory excerpt's budget. It starts once the server answers (resuming
 * or finishing what a crash interrupted) and stops before the summarizer and the memory, since it writes memory files.
 */
export const consolidationPlugin = fp(
  async (app) => {
    const { config, models, memory } = app;
    const model =
      models.chat && config.memory.consolidationModel
        ? models.named(config.memory.consolidationModel)
        : models.chat;
    const consolidator =
      model === undefined
        ? undefined
        : new Consolidator({
            store: memory.store,
            stateDir: join(config.home, "state"),
            model,
            tokenCounter: models.tokenCounter,
            timeZone: memory.timeZone,
            // MEMORY.md is kept small enough for the excerpt every turn starts with (no excerpt: the default budget).
            ...(config.memory.contextTokens > 0 ? { budgetTokens: config.memory.contextTokens } : {}),
            contextWindow: config.model.contextWindow,
            maxOutputTokens: config.model.maxOutputTokens,
            at: config.memory.consolidateAt,
            // Only the owner's forget requests exist (a shared chat has no forget tool).
            forgotten: () => memory.forgotten().map((entry) => normalizePhrase(entry.phrase)),
            // Search finds the new MEMORY.md (and a topic file) at once, not after the watcher's debounce.
            onCommitted: async () => {
              await memory.indexer.sync();
            },
            logger: app.log,
          });
    app.decorate("consolidation", consolidator);
    if (consolidator === undefined) return;
    // Not awaited on close: a server that never got ready never starts it (and stop() makes a late start a no-op).
    void aTurnAfterReady(app)
      .then(() => consolidator.start())
      .catch((error: unknown) =>
        app.log.error(
          { error: describeError(error) },
          "consolidation could not start; runs wait for the next start",
        ),
      );
    app.addHook("onClose", async () => {
      await consolidator.stop({ deadlineMs: app.shutdown.deadlineMs() });
      app.log.debug({}, "consolidation stopped");
    });
  },
  {
    name: PLUGIN.consolidation,
    fastify: "5.x",
    dependencies: [PLUGIN.config, PLUGIN.models, PLUGIN.memory, PLUGIN.summarizer],
  },
);
