import { join } from "node:path";
import fp from "fastify-plugin";
import { type MemorySampler, startMemorySampler } from "../stats/memory-sampler.js";
import { recordServerEvents } from "../stats/record-server-events.js";
import { createStatsJournal, type StatsJournal } from "../stats/stats-journal.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The charts' history: tokens per day, context per turn, memory size per day. */
    stats: { readonly journal: StatsJournal; readonly memorySampler: MemorySampler };
  }
}

/**
 * The charts' history, recorded from model usage and the event bus. Registered before the sessions, so it
 * is flushed after them: the last turns and compactions of a shutdown are kept.
 */
export const statsPlugin = fp(
  async (app) => {
    const journal = createStatsJournal({
      dir: join(app.config.home, "state", "stats"),
      timeZone: app.memory.timeZone,
      logger: app.log,
    });
    app.models.onUsage((modelName, usage) => journal.recordUsage(modelName, usage));
    const stopRecording = recordServerEvents(app.events, journal);
    const memorySampler = startMemorySampler({
      journal,
      indexStatus: () => app.memory.indexStatus(),
      logger: app.log,
    });
    app.decorate("stats", { journal, memorySampler });
    app.addHook("onClose", async () => {
      memorySampler.stop();
      stopRecording();
      await journal.flush();
      app.log.debug({ plugin: PLUGIN.stats }, "plugin closed");
    });
  },
  {
    name: PLUGIN.stats,
    fastify: "5.x",
    dependencies: [PLUGIN.config, PLUGIN.telemetry, PLUGIN.models, PLUGIN.memory],
  },
);
