import type { FastifyInstance } from "fastify";
import type { SessionManager } from "../runtime/session-manager.js";

/** What the web console's routes need. */
export interface ConsoleDependencies {
  readonly sessions: SessionManager;
}

/** The web console: its static files at `/` and its chat route (work in progress: serves nothing yet). */
export async function registerConsole(_app: FastifyInstance, _deps: ConsoleDependencies): Promise<void> {}
