import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { errnoCode, UserError } from "@almanac/core";
import { PRIVATE_DIRECTORY_MODE } from "@almanac/durable-write";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from "fastify";
import type pino from "pino";
import type { AlmanacConfig } from "./config/config-schema.js";
import { secretValues } from "./config/load-config.js";
import { type TightenedPermissions, tightenDataPermissions } from "./data-permissions.js";
import { acquireHomeLock } from "./home-lock.js";
import { type AdminToken, ensureAdminToken } from "./http/admin-token.js";
import { createHttpErrorHandler, handleClientError, MAX_PATH_SEGMENT_CHARS } from "./http/http-errors.js";
import { createLazySchemaCompilers, type LazySchemaCompilers } from "./http/lazy-schema-compilers.js";
import { createLogger } from "./logger.js";
import { adminRoutesPlugin } from "./plugins/admin-routes-plugin.js";
import { attachmentsPlugin } from "./plugins/attachments-plugin.js";
import { channelsPlugin } from "./plugins/channels-plugin.js";
import { configPlugin, createShutdownState } from "./plugins/config-plugin.js";
import { consolePlugin } from "./plugins/console-plugin.js";
import { consolidationPlugin } from "./plugins/consolidation-plugin.js";
import { httpPlugin } from "./plugins/http-plugin.js";
import { memoryPlugin } from "./plugins/memory-plugin.js";
import { modelsPlugin } from "./plugins/models-plugin.js";
import { openAIRoutesPlugin } from "./plugins/openai-routes-plugin.js";
import { operationsRoutesPlugin } from "./plugins/operations-routes-plugin.js";
import { sessionsPlugin } from "./plugins/sessions-plugin.js";
import { statsPlugin } from "./plugins/stats-plugin.js";
import { summarizerPlugin } from "./plugins/summarizer-plugin.js";
import { tasksPlugin } from "./plugins/tasks-plugin.js";
import { telemetryPlugin } from "./plugins/telemetry-plugin.js";
import { toolsPlugin } from "./plugins/tools-plugin.js";
import { createStorageHealth } from "./storage-health.js";

/** Options of {@link buildApp}. */
export interface BuildAppOptions {
  /** Where log lines go (default stdout). */
  readonly logDestination?: pino.DestinationStream;
  /** Where the one-time "generated admin token" notice goes (default stdout). */
  readonly announce?: (line: string) => void;
  /** Fastify's schema compilers (default: lazy ones); tests pass their own to compile every route's schemas. */
  readonly schemaCompilers?: LazySchemaCompilers;
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
  consolidationPlugin,
  statsPlugin,
  tasksPlugin,
  toolsPlugin,
  attachmentsPlugin,
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
  const tightened = await prepareDataDirectory(config.home);
  const homeLock = await acquireHomeLock(config.home);
  let app: FastifyInstance;
  let token: AdminToken;
  try {
    token = await ensureAdminToken(config.home, config.server.adminToken);
    // Every secret is known before the first log line, so none can reach the log (an SDK's debug line included).
    const logger = createLogger(config.log.level, options.logDestination, [
      ...secretValues(config),
      token.token,
    ]);
    if (tightened.files + tightened.directories > 0)
      logger.info(
        tightened,
        "took group and other permissions off files in the data directory (now 0600/0700)",
      );

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
      routerOptions: { maxParamLength: MAX_PATH_SEGMENT_CHARS },
      frameworkErrors: createHttpErrorHandler({
        isShuttingDown: shutdown.isShuttingDown,
        storageError: storage.classify,
      }),
      clientErrorHandler: handleClientError,
      schemaController: { compilersFactory: options.schemaCompilers ?? createLazySchemaCompilers() },
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
  if (token.source === "generated") {
    // Said once the server listens: a start that fails (the port is taken) forgets the token it made, so the
    // next start makes and prints one again instead of keeping a token nobody saw.
    let announced = false;
    app.addHook("onListen", async () => {
      announced = true;
      (options.announce ?? ((line) => process.stdout.write(`${line}\n`)))(tokenAnnouncement(token));
    });
    app.addHook("onClose", async () => {
      if (!announced) await rm(token.file, { force: true });
    });
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

/** The notice of a generated admin token: set apart from the log lines around it, so a person finds it. */
function tokenAnnouncement(token: AdminToken): string {
  const rule = "=".repeat(72);
  return [
    rule,
    "Almanac generated an admin token. Log in to the console and call /api and /v1 with it",
    `(as "Authorization: Bearer <token>"). It is stored in ${token.file} (mode 0600):`,
    "",
    `    ${token.token}`,
    "",
    "Set ALMANAC_ADMIN_TOKEN to choose your own instead.",
    rule,
  ].join("\n");
}

/**
 * Creates the data directory's folders, private to this user (0700), and takes group and other permissions
 * off what is already there (see {@link tightenDataPermissions}). A directory this user cannot write (a
 * root-owned bind mount in Docker, a read-only disk) stops the start with one line saying what to do.
 */
async function prepareDataDirectory(home: string): Promise<TightenedPermissions> {
  try {
    await Promise.all(
      ["sessions", "state", "workspace/memory"].map((dir) =>
        mkdir(join(home, dir), { recursive: true, mode: PRIVATE_DIRECTORY_MODE }),
      ),
    );
    return await tightenDataPermissions(home);
  } catch (error) {
    const code = errnoCode(error);
    if (code !== "EACCES" && code !== "EPERM" && code !== "EROFS") throw error;
    const uid = typeof process.getuid === "function" ? process.getuid() : undefined;
    throw new UserError(
      "storage.not_writable",
      `The data directory ${home} is not writable by this user${uid === undefined ? "" : ` (uid ${uid})`}: ${code}. ` +
        `Make it writable (in Docker: chown ${uid ?? 1000}:${uid ?? 1000} the host directory mounted on it) or set ALMANAC_HOME to another directory.`,
      { cause: error },
    );
  }
}
