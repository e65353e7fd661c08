import type { FastifyInstance } from "fastify";

/**
 * Resolves a turn of the event loop after `app` is ready: by then `listen()` has bound the port (on an IP
 * address; a host name is looked up first), so work started from here does not delay the first answer. An app
 * that only `inject()`s gets there the same way; one that never gets ready never resolves it.
 */
export function aTurnAfterReady(app: FastifyInstance): Promise<void> {
  return new Promise((resolve) => {
    app.addHook("onReady", async () => {
      setImmediate(resolve);
    });
  });
}
