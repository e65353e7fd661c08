import { join } from "node:path";
import fp from "fastify-plugin";
import { buildChannels } from "../channels/build-adapters.js";
import { type ChannelHub, createChannelHub } from "../channels/channel-hub.js";
import { createDedupStore } from "../channels/dedup-store.js";
import { registerWebhookRoutes } from "../routes/webhook-routes.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /**
     * The chat-platform adapters behind the gate. Built with the app but connected only by `start()`, which
     * `startServer` calls once the server listens (a webhook platform must reach the route by then); an
     * app used through `inject()` never connects to a platform.
     */
    channels: ChannelHub;
  }
}

/**
 * The channel adapters, their gate (dedup, allowlists) and the webhook routes of the adapters that take
 * webhooks. Closed before the sessions: replies being sent go out (up to 2 s), then the adapters stop, so
 * no platform message arrives at a session that is being flushed.
 */
export const channelsPlugin = fp(
  async (app) => {
    const { config } = app;
    const { channels, disabled } = await buildChannels(config, app.log);
    const hub = createChannelHub({
      channels,
      disabled,
      dedup: await createDedupStore({
        file: join(config.home, "state", "channel-dedup.jsonl"),
        retentionMs: config.channels.dedupHours * 3_600_000,
      }),
      sessions: app.sessions,
      attachments: app.attachments,
      streamReplies: config.channels.streamReplies,
      logger: app.log,
    });
    app.decorate("channels", hub);
    await registerWebhookRoutes(
      app,
      channels.map((entry) => entry.adapter),
    );
    app.addHook("onClose", async () => {
      await hub.stop(2_000);
      app.log.debug({ plugin: PLUGIN.channels }, "plugin closed");
    });
  },
  {
    name: PLUGIN.channels,
    fastify: "5.x",
    dependencies: [PLUGIN.config, PLUGIN.http, PLUGIN.attachments, PLUGIN.sessions],
  },
);
