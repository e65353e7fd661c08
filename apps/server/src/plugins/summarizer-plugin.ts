import type { SummaryQueue } from "@almanac/summarizer";
import fp from "fastify-plugin";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** The summarizer queue (absent without a model: nothing to summarize with). */
    summarizer: SummaryQueue | undefined;
  }
}

/**
 * The summarizer queue: the sessions journal compacted messages to it, so it stops after them (its running
 * job gets the shutdown deadline; what is left stays journaled for the next start) and before the index.
 */
export const summarizerPlugin = fp(
  async (app) => {
    const queue = app.memory.queue;
    app.decorate("summarizer", queue);
    app.addHook("onClose", async () => {
      await queue?.stop({ deadlineMs: app.shutdown.deadlineMs() });
      app.log.debug({ plugin: PLUGIN.summarizer }, "plugin closed");
    });
  },
  { name: PLUGIN.summarizer, fastify: "5.x", dependencies: [PLUGIN.memory] },
);
