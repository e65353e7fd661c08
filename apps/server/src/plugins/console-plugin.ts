import fp from "fastify-plugin";
import { registerConsole } from "../routes/console.js";
import { PLUGIN } from "./plugin-names.js";

/** The web console (static files, public) and its chat route. Registered last: its `/*` fallback. */
export const consolePlugin = fp(
  async (app) => {
    await registerConsole(app, { sessions: app.sessions, attachments: app.attachments });
  },
  {
    name: PLUGIN.console,
    fastify: "5.x",
    dependencies: [PLUGIN.http, PLUGIN.attachments, PLUGIN.sessions],
    encapsulate: true,
  },
);
