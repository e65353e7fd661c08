import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { createToolkit, createWorkspaceFileTools } from "@almanac/agent";
import { createTokenCounter, UserError } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { memoryGuideFor } from "@almanac/memory";
import type { FastifyInstance } from "fastify";
import type pino from "pino";
import { buildApp } from "./app.js";
import { buildChannels } from "./channels/build-adapters.js";
import { createChannelHub } from "./channels/channel-hub.js";
import { createDedupStore } from "./channels/dedup-store.js";
import type { AlmanacConfig } from "./config/config-schema.js";
import { loadConfig, missingModelSettings, redactConfig, secretValues } from "./config/load-config.js";
import { createEventBus } from "./events/event-bus.js";
import { acquireHomeLock } from "./home-lock.js";
import { ensureAdminToken } from "./http/admin-token.js";
import { createLogger } from "./logger.js";
import { createMemoryServices } from "./memory-services.js";
import { createMetrics } from "./metrics.js";
import type { ServerInfo } from "./routes/admin-routes.js";
import { type AgentRuntime, createAgentRuntime } from "./runtime/agent-runtime.js";
import { SessionManager } from "./runtime/session-manager.js";
import { DEFAULT_SYSTEM_PROMPT } from "./runtime/system-prompt.js";
import { createLaneScheduler } from "./sessions/lane-scheduler.js";
import { createSessionStore, type SessionStore } from "./sessions/session-store.js";
import { startMemorySampler } from "./stats/memory-sampler.js";
import { recordServerEvents } from "./stats/record-server-events.js";
import { createStatsJournal, type StatsJournal } from "./stats/stats-journal.js";
import { createStorageHealth, type StorageHealth } from "./storage-health.js";

/** Options of {@link startServer}. Only this app reads the process environment, and only through here. */
export interface StartServerOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Where log lines go (default stdout). */
  readonly logDestination?: pino.DestinationStream;
  /** Where the one-time "generated admin token" notice goes (default stdout). */
  readonly announce?: (line: string) => void;
}

/** A running server. */
export interface ServerHandle {
  readonly app: FastifyInstance;
  readonly url: string;
  readonly config: AlmanacConfig;
  readonly adminToken: string;
  /** Graceful stop: refuse new requests, let running turns finish until the deadline, flush, close. */
  close(): Promise<void>;
}

async function packageVersion(): Promise<string> {
  const text = await readFile(new URL("../package.json", import.meta.url), "utf8");
  const parsed: unknown = JSON.parse(text);
  return typeof parsed === "object" && parsed !== null && "version" in parsed
    ? String(parsed.version)
    : "0.0.0";
}

/** Loads the configuration, wires every service and starts listening. */
export async function startServer(options: StartServerOptions): Promise<ServerHandle> {
  const { config } = loadConfig({ env: options.env, cwd: options.cwd });
  const workspace = join(config.home, "workspace");
  await Promise.all(
    ["sessions", "state", "workspace/memory"].map((dir) =>
      mkdir(join(config.home, dir), { recursive: true }),
    ),
  );
  const lock = await acquireHomeLock(config.home);
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

  const scheduler = createLaneScheduler({
    maxConcurrent: config.sessions.maxConcurrentTurns,
    laneCapacity: config.sessions.queueLimit,
    logger,
  });
  let sessions: SessionManager | undefined;
  // The charts' history (tokens per day, context per turn); made once the memory time zone is known.
  let stats: StatsJournal | undefined;
  // Changes for the live console (`GET /api/events`); publishing costs nothing while no console listens.
  const events = createEventBus({
    onListenerError: (error) => logger.warn({ err: error }, "a live event listener failed"),
  });
  const metrics = createMetrics({
    queueDepth: () => scheduler.stats().queued,
    runningTurns: () => scheduler.stats().running,
    loadedSessions: () => sessions?.loadedCount() ?? 0,
    contextTokens: () => sessions?.loadedContextTokens() ?? [],
  });
  const missing = missingModelSettings(config);
  const basePrompt = config.agent.systemPrompt ?? DEFAULT_SYSTEM_PROMPT;
  const tokenCounter = createTokenCounter();
  /** A chat model on the configured endpoint (the compaction and summarizer models may use other names). */
  const modelNamed = (modelName: string) =>
    createOpenAIChatModel({
      baseURL: config.model.baseUrl as string,
      apiKey: config.model.apiKey ?? "",
      model: modelName,
      headers: config.model.headers,
      contextWindow: config.model.contextWindow,
      // Every request carries the cap, so prompt + answer never exceed the window.
      maxOutputTokens: config.model.maxOutputTokens,
      outputCapParameter: config.model.outputCapParameter,
      timeoutMs: config.model.timeoutMs,
      maxRetries: config.model.maxRetries,
      logger,
      onUsage: ({ usage, latencyMs }) => {
        metrics.modelRequestDuration.observe({ model: modelName }, latencyMs / 1000);
        metrics.modelTokens.inc({ model: modelName, kind: "prompt" }, usage.promptTokens);
        metrics.modelTokens.inc({ model: modelName, kind: "completion" }, usage.completionTokens);
        stats?.recordUsage(modelName, usage);
      },
    });
  const model = missing.length === 0 ? modelNamed(config.model.name as string) : undefined;
  const memory = await createMemoryServices({
    config,
    summarizerModel:
      model && config.memory.summarizerModel ? modelNamed(config.memory.summarizerModel) : model,
    tokenCounter,
    logger,
  });
  const journal = createStatsJournal({
    dir: join(config.home, "state", "stats"),
    timeZone: memory.timeZone,
    logger,
  });
  stats = journal;
  const stopRecording = recordServerEvents(events, journal);
  const memorySampler = startMemorySampler({ journal, indexStatus: () => memory.indexStatus(), logger });
  let runtime: AgentRuntime | undefined;
  if (model) {
    runtime = createAgentRuntime({
      config,
      model,
      compactionModel: config.compaction.model ? modelNamed(config.compaction.model) : model,
      scopeOf: (sessionKey) => memory.scopeOf(sessionKey),
      toolkit: (scope) => {
        // A shared chat gets only the memory tools over its own log: no file tool reaches the owner's workspace.
        if (scope.kind === "shared") return createToolkit(memory.toolsFor(scope));
        const seen = new Map<string, string>();
        return createToolkit([
          ...memory.toolsFor(scope),
          ...createWorkspaceFileTools({
            root: workspace,
            readText: (target) => memory.readWorkspaceText(target, seen),
            writeText: (target, content) => memory.writeWorkspaceText(target, content, seen),
          }),
        ]);
      },
      tokenCounter,
      basePrompt,
      journal: (sessionKey, reason, messages, summary) =>
        memory.enqueue(sessionKey, reason, messages, summary),
      onCompaction: (event, sessionKey) => {
        if (event.type === "compaction-end" && event.outcome !== "failed" && event.outcome !== "unchanged") {
          metrics.compactions.inc({ trigger: event.reason });
          events.publish({
            type: "session-compacted",
            sessionKey,
            reason: event.reason,
            tokensBefore: event.tokensBefore,
            tokensAfter: event.tokensAfter,
          });
        }
      },
      logger,
    });
  } else {
    logger.warn(
      { missing },
      "no model configured: the server runs, chat requests get 503 until these are set",
    );
  }

  const storage = createStorageHealth({ dataDir: config.home });
  sessions = new SessionManager({
    store: guardedStore(createSessionStore({ dir: join(config.home, "sessions"), logger }), storage),
    scheduler,
    runtime,
    missingModelSettings: missing,
    tokenCounter,
    limits: {
      maxMessageChars: config.server.maxMessageChars,
      turnTimeoutMs: config.sessions.turnTimeoutMs,
      idleUnloadMs: config.sessions.idleUnloadMs,
      contextWindow: config.model.contextWindow,
    },
    logger,
    events,
    lifecycle: {
      // The memory guide and excerpt of the session's scope: a shared chat never sees the owner's files.
      sessionContext: async (key) => {
        const scope = memory.scopeOf(key);
        return `${memoryGuideFor(scope)}\n\n${await memory.memoryContext(scope)}`;
      },
      sessionEnded: (key, messages) => memory.enqueue(key, "new-session", messages),
      statusLines: async () => {
        if (!memory.queue) return [];
        const stats = await memory.queue.stats();
        return [
          `Summarizer queue: ${stats.pending} pending, ${stats.running} running, ${stats.parked} parked${stats.parked > 0 ? " (see /api/summarizer/jobs)" : ""}`,
        ];
      },
    },
    observer: {
      turnEnded: (channel, outcome, seconds) => {
        metrics.turns.inc({ channel, outcome });
        if (outcome !== "command") metrics.turnDuration.observe({ channel }, seconds);
      },
    },
  });

  const { channels, disabled, feishuWebhook } = await buildChannels(config, logger);
  const hub = createChannelHub({
    channels,
    disabled,
    dedup: await createDedupStore({
      file: join(config.home, "state", "channel-dedup.jsonl"),
      retentionMs: config.channels.dedupHours * 3_600_000,
    }),
    sessions,
    logger,
  });

  const version = await packageVersion();
  const startedAt = Date.now();
  const info = (): ServerInfo => ({
    version,
    startedAt,
    model: {
      configured: runtime !== undefined,
      ...(config.model.name === undefined ? {} : { name: config.model.name }),
      missing,
    },
    tokenCounter: tokenCounter.method,
    storage: storage.status(),
    config: redactConfig(config),
  });
  let shuttingDown = false;
  const app = await buildApp({
    config,
    logger,
    adminToken: token.token,
    sessions,
    metrics,
    info,
    memory,
    ...(feishuWebhook ? { webhooks: { feishu: feishuWebhook } } : {}),
    channels: () => hub.statuses(),
    isShuttingDown: () => shuttingDown,
    storage,
    events,
    stats: { journal, memorySampler },
  });
  try {
    await app.listen({ host: config.server.host, port: config.server.port });
  } catch (error) {
    await Promise.allSettled([memory.stop(0), app.close(), lock.release()]);
    await sessions.close();
    throw listenError(error, config.server.host, config.server.port);
  }
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.server.port;
  const url = `http://${config.server.host.includes(":") ? `[${config.server.host}]` : config.server.host}:${port}`;
  await hub.start();
  logger.info({ url, home: config.home, model: config.model.name ?? null }, "almanac listening");

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shuttingDown = true;
      logger.info({ deadlineMs: config.shutdown.deadlineMs }, "shutting down: finishing running turns");
      const drained = await scheduler.close({ deadlineMs: config.shutdown.deadlineMs });
      logger.info(drained, "turns drained");
      await hub.stop(2_000);
      await memory.stop(config.shutdown.deadlineMs);
      memorySampler.stop();
      stopRecording();
      await journal.flush();
      await sessions?.close();
      await app.close();
      await lock.release();
      logger.info({}, "stopped");
    })();
    return closing;
  };
  return { app, url, config, adminToken: token.token, close };
}

/** The session store with every write reported to `storage` (a full disk becomes `storage.full`, HTTP 507). */
function guardedStore(store: SessionStore, storage: StorageHealth): SessionStore {
  return {
    ...store,
    save: (snapshot) => storage.guard(() => store.save(snapshot)),
    commit: (snapshot, messages) => storage.guard(() => store.commit(snapshot, messages)),
    appendTranscript: (key, messages) => storage.guard(() => store.appendTranscript(key, messages)),
    archive: (key) => storage.guard(() => store.archive(key)),
    delete: (key) => storage.guard(() => store.delete(key)),
  };
}

/** A port already taken (or not ours to bind) as a user error naming the address and the settings to change. */
function listenError(error: unknown, host: string, port: number): unknown {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
  const address = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (code === "EADDRINUSE") {
    return new UserError(
      "server.port_in_use",
      `Cannot listen on ${address}: the port is already in use (another Almanac or program runs there). Stop it, or set ALMANAC_PORT (or ALMANAC_HOST) to a free one.`,
      { cause: error },
    );
  }
  if (code === "EACCES" || code === "EADDRNOTAVAIL") {
    return new UserError(
      "server.cannot_listen",
      `Cannot listen on ${address} (${code}): ${code === "EACCES" ? "ports below 1024 need privileges" : "that address is not on this machine"}. Set ALMANAC_PORT or ALMANAC_HOST.`,
      { cause: error },
    );
  }
  return error;
}
