import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type pino from "pino";
import type { AlmanacConfig } from "./config/config-schema.js";
import { secretValues } from "./config/load-config.js";
import { acquireHomeLock } from "./home-lock.js";
import { ensureAdminToken } from "./http/admin-token.js";
import { createHttpErrorHandler, handleClientError } from "./http/http-errors.js";
import { createLogger } from "./logger.js";
import { adminRoutesPlugin } from "./plugins/admin-routes-plugin.js";
import { channelsPlugin } from "./plugins/channels-plugin.js";
import { configPlugin, createShutdownState } from "./plugins/config-plugin.js";
import { consolePlugin } from "./plugins/console-plugin.js";
import { httpPlugin } from "./plugins/http-plugin.js";
import { memoryPlugin } from "./plugins/memory-plugin.js";
import { modelsPlugin } from "./plugins/models-plugin.js";
import { openAIRoutesPlugin } from "./plugins/openai-routes-plugin.js";
import { operationsRoutesPlugin } from "./plugins/operations-routes-plugin.js";
import { sessionsPlugin } from "./plugins/sessions-plugin.js";
import { statsPlugin } from "./plugins/stats-plugin.js";
import { summarizerPlugin } from "./plugins/summarizer-plugin.js";
import { telemetryPlugin } from "./plugins/telemetry-plugin.js";
import { createStorageHealth } from "./storage-health.js";

/** Options of {@link buildApp}. */
export interface BuildAppOptions {
  /** Where log lines go (default stdout). */
  readonly logDestination?: pino.DestinationStream;
  /** Where the one-time "generated admin token" notice goes (default stdout). */
  readonly announce?: (line: string) => void;
}

/**
 * The services in registration order; each declares the plugins it needs, and Fastify refuses to start when
 * one is missing or comes later. Closing runs their `onClose` hooks in reverse: the channels stop taking
 * messages, then the sessions flush, then the summarizer stops, then the index closes, then the home lock
 * is released. Before that, the `preClose` hooks run in this order: new requests get 503 (http), running
 * turns finish up to the deadline (sessions), live event streams end (admin routes); then the HTTP server
 * closes.
 */
export const ALMANAC_PLUGINS = [
  httpPlugin,
  telemetryPlugin,
  modelsPlugin,
  memoryPlugin,
  summarizerPlugin,
  statsPlugin,
  sessionsPlugin,
  channelsPlugin,
  operationsRoutesPlugin,
  openAIRoutesPlugin,
  adminRoutesPlugin,
  consolePlugin,
] as const;

async function packageVersion(): Promise<string> {
  const text = await readFile(new URL("../package.json", import.meta.url), "utf8");
  const parsed: unknown = JSON.parse(text);
  return typeof parsed === "object" && parsed !== null && "version" in parsed
    ? String(parsed.version)
    : "0.0.0";
}

/**
 * Builds the whole server as Fastify plugins, ready but not listening: tests can `inject()`, `startServer`
 * listens. Takes the data directory's lock (released by `app.close()`); no chat platform is contacted until
 * `app.channels.start()`.
 */
export async function buildApp(
  config: AlmanacConfig,
  options: BuildAppOptions = {},
): Promise<FastifyInstance> {
  await Promise.all(
    ["sessions", "state", "workspace/memory"].map((dir) =>
      mkdir(join(config.home, dir), { recursive: true }),
    ),
  );
  const homeLock = await acquireHomeLock(config.home);
  let app: FastifyInstance;
  try {
    const token = await ensureAdminToken(config.home, config.server.adminToken);
    // Every secret is known before the first log line, so none can reach the log (an SDK's debug line included).
    const logger = createLogger(config.log.level, options.logDestination, [
      ...secretValues(config),
      token.token,
    ]);
    if (token.source === "generated") {
      (options.announce ?? ((line) => process.stdout.write(`${line}\n`)))(
        `Almanac generated an admin token (stored in ${token.file}, mode 0600). Use it as "Authorization: Bearer <token>":\n${token.token}`,
      );
    }
    const storage = createStorageHealth({ dataDir: config.home });
    const shutdown = createShutdownState(config.shutdown.deadlineMs);
    app = Fastify({
      loggerInstance: logger as FastifyBaseLogger,
      // One line per request, written when it is answered (http-plugin.ts), instead of fastify's two.
      logController: new LogController({ disableRequestLogging: true }),
      bodyLimit: config.server.bodyLimitBytes,
      // Our own onRequest hook answers 503 in the documented shape from the moment shutdown begins.
      return503OnClosing: false,
      // Session keys in `/api/sessions/{key}` can be a few hundred characters (find-my-way's default is 100).
      routerOptions: { maxParamLength: 2048 },
      frameworkErrors: createHttpErrorHandler({
        isShuttingDown: shutdown.isShuttingDown,
        storageError: storage.classify,
      }),
      clientErrorHandler: handleClientError,
    });
    await app.register(configPlugin, {
      config,
      adminToken: token.token,
      version: await packageVersion(),
      homeLock,
      storage,
      shutdown,
    });
  } catch (error) {
    await homeLock.release();
    throw error;
  }
  try {
    for (const plugin of ALMANAC_PLUGINS) await app.register(plugin);
    await app.ready();
  } catch (error) {
    // What did start (the index, the summarizer, the lock) is closed in the same order as a shutdown.
    app.shutdown.begin({ deadlineMs: 0 });
    await app.close().catch(() => {});
    throw error;
  }
  return app;
}
