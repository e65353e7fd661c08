import fp from "fastify-plugin";
import { registerOpenAIRoutes } from "../routes/openai-routes.js";
import { PLUGIN } from "./plugin-names.js";

/** The OpenAI-compatible API (`/v1/models`, `/v1/chat/completions`). */
export const openAIRoutesPlugin = fp(
  async (app) => {
    registerOpenAIRoutes(app, app.sessions, app.attachments);
  },
  {
    name: PLUGIN.openAIRoutes,
    fastify: "5.x",
    dependencies: [PLUGIN.http, PLUGIN.attachments, PLUGIN.sessions],
    // Routes only: nothing it adds reaches the rest of the app.
    encapsulate: true,
  },
);
