import { join } from "node:path";
import { memoryGuideFor } from "@almanac/memory-files";
import fp from "fastify-plugin";
import { compactionWindow } from "../config/compaction-window.js";
import { SessionManager } from "../runtime/session-manager.js";
import { DEFAULT_SYSTEM_PROMPT } from "../runtime/system-prompt.js";
import { TurnRunner } from "../runtime/turn-runner.js";
import { createLaneScheduler, type LaneScheduler } from "../sessions/lane-scheduler.js";
import { createSessionStore, type SessionStore } from "../sessions/session-store.js";
import type { StorageHealth } from "../storage-health.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Every conversation: routing, loading and unloading, turns, commands. */
    sessions: SessionManager;
    /** One FIFO lane per session under a global limit (its figures feed the metrics). */
    laneScheduler: LaneScheduler;
  }
}

/**
 * The session manager with its lane scheduler, file store and agent runtime. Its `preClose` hook lets
 * running turns finish (up to the shutdown deadline) while the HTTP server still answers; its `onClose`
 * flushes the sessions after the channels stopped and before the summarizer and the index close.
 */
export const sessionsPlugin = fp(
  async (app) => {
    const { config, memory, models, metrics, events, storage, tools } = app;
    const logger = app.log;
    const scheduler = createLaneScheduler({
      maxConcurrent: config.sessions.maxConcurrentTurns,
      laneCapacity: config.sessions.queueLimit,
      logger,
    });
    const model = models.chat;
    // Everything a turn depends on, in one typed record: this is the one place it is assembled.
    const runner =
      model === undefined
        ? undefined
        : new TurnRunner({
            model,
            compactionModel: config.compaction.model ? models.named(config.compaction.model) : model,
            tools: tools.catalog,
            approvals: tools.desk.gate,
            scopeOf: (sessionKey) => memory.scopeOf(sessionKey),
            basePrompt: config.agent.systemPrompt ?? DEFAULT_SYSTEM_PROMPT,
            tokenCounter: models.tokenCounter,
            compaction: { ...compactionWindow(config), notifyUser: config.compaction.notify },
            maxIterations: config.agent.maxIterations,
            turnTimeoutMs: config.sessions.turnTimeoutMs,
            journal: (batch) => memory.enqueue(batch),
            onCompaction: (event, sessionKey) => {
              if (
                event.type !== "compaction-end" ||
                event.outcome === "failed" ||
                event.outcome === "unchanged"
              )
                return;
              metrics.compactions.inc({ trigger: event.reason });
              events.publish({
                type: "session-compacted",
                sessionKey,
                reason: event.reason,
                tokensBefore: event.tokensBefore,
                tokensAfter: event.tokensAfter,
              });
            },
            clock: Date.now,
            logger,
          });
    const sessions = new SessionManager({
      store: guardedStore(createSessionStore({ dir: join(config.home, "sessions"), logger }), storage),
      scheduler,
      runner,
      missingModelSettings: [...models.missing],
      tokenCounter: models.tokenCounter,
      limits: {
        maxMessageChars: config.server.maxMessageChars,
        idleUnloadMs: config.sessions.idleUnloadMs,
        contextWindow: config.model.contextWindow,
      },
      logger,
      events,
      approvals: tools.desk,
      lifecycle: {
        // The memory guide and excerpt of the session's scope: a shared chat never sees the owner's files.
        sessionContext: async (key, roomTokens) => {
          const scope = memory.scopeOf(key);
          const guide = memoryGuideFor(scope);
          // The excerpt gets what the guide and the excerpt's own headings leave of the room.
          const budget =
            roomTokens === undefined
              ? undefined
              : roomTokens - models.tokenCounter.countText(guide) - EXCERPT_HEADINGS_TOKENS;
          return `${guide}\n\n${await memory.memoryContext(scope, budget)}`;
        },
        sessionEnded: (key, messages) =>
          memory.enqueue({ sessionKey: key, reason: "new-session", messages, createdAt: Date.now() }),
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
    app.decorate("laneScheduler", scheduler);
    app.decorate("sessions", sessions);
    app.addHook("preClose", async () => {
      const drained = await scheduler.close({ deadlineMs: app.shutdown.deadlineMs() });
      logger.info(drained, "turns drained");
    });
    app.addHook("onClose", async () => {
      await sessions.close();
      app.log.debug({ plugin: PLUGIN.sessions }, "plugin closed");
    });
  },
  {
    name: PLUGIN.sessions,
    fastify: "5.x",
    dependencies: [
      PLUGIN.config,
      PLUGIN.telemetry,
      PLUGIN.models,
      PLUGIN.memory,
      PLUGIN.summarizer,
      PLUGIN.tools,
    ],
  },
);

/** The session store with every write reported to `storage` (a full disk becomes `storage.full`, HTTP 507). */
function guardedStore(store: SessionStore, storage: StorageHealth): SessionStore {
  return {
    ...store,
    save: (snapshot) => storage.guard(() => store.save(snapshot)),
    commit: (snapshot, messages) => storage.guard(() => store.commit(snapshot, messages)),
    appendTranscript: (key, messages, durability) =>
      storage.guard(() => store.appendTranscript(key, messages, durability)),
    archive: (key) => storage.guard(() => store.archive(key)),
    delete: (key) => storage.guard(() => store.delete(key)),
  };
}

/** Tokens of the memory excerpt's headings and notes, beside the excerpt lines its budget counts. */
const EXCERPT_HEADINGS_TOKENS = 120;
