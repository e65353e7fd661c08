import { join } from "node:path";
import fp from "fastify-plugin";
import { BackupStore } from "../backup/backup-store.js";
import { attachmentMaxBytes } from "../config/attachment-max-bytes.js";
import { registerAdminRoutes } from "../routes/admin-routes.js";
import { registerBackupRoutes } from "../routes/backup-routes.js";
import { registerConsolidationRoutes } from "../routes/consolidation-routes.js";
import { registerFileRoutes } from "../routes/file-routes.js";
import { registerForgetRoutes } from "../routes/forget-routes.js";
import { registerIndexRoutes } from "../routes/index-routes.js";
import { registerLiveRoutes } from "../routes/live-routes.js";
import { registerMemoryRoutes } from "../routes/memory-routes.js";
import { registerSetupRoutes } from "../routes/setup-routes.js";
import { registerStatsRoutes } from "../routes/stats-routes.js";
import { registerTaskRoutes } from "../routes/task-routes.js";
import { registerToolRoutes } from "../routes/tool-routes.js";
import { PLUGIN } from "./plugin-names.js";

/**
 * The admin REST API under `/api`: sessions, memory files, workspace files' bytes, the index, the first-run checks, the charts'
 * data, backups and the live events. Its `preClose` hook ends every open event stream, after the turns drained.
 */
export const adminRoutesPlugin = fp(
  async (app) => {
    const { sessions, memory, channels } = app;
    registerAdminRoutes(app, sessions, app.serverInfo);
    registerMemoryRoutes(app, memory);
    registerForgetRoutes(app, memory);
    registerFileRoutes(app, {
      workspace: join(app.config.home, "workspace"),
      maxBytes: attachmentMaxBytes(app.config),
    });
    registerConsolidationRoutes(app, app.consolidation);
    registerToolRoutes(app, app.tools);
    registerTaskRoutes(
      app,
      app.tasks,
      app.config.memory.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
    );
    await registerIndexRoutes(app, memory);
    registerSetupRoutes(app, { config: app.config, memory });
    registerStatsRoutes(app, { ...app.stats, sessions, memory });
    registerBackupRoutes(app, new BackupStore({ home: app.config.home, almanacVersion: app.almanacVersion }));
    const queue = app.summarizer;
    registerLiveRoutes(app, {
      bus: app.events,
      sessions,
      sources: {
        ...(queue ? { queue: () => queue.stats() } : {}),
        index: () => memory.indexStatus(),
        channels: () => channels.statuses(),
      },
    });
  },
  {
    name: PLUGIN.adminRoutes,
    fastify: "5.x",
    encapsulate: true,
    dependencies: [
      PLUGIN.http,
      PLUGIN.telemetry,
      PLUGIN.memory,
      PLUGIN.summarizer,
      PLUGIN.consolidation,
      PLUGIN.stats,
      PLUGIN.tasks,
      PLUGIN.tools,
      PLUGIN.sessions,
      PLUGIN.channels,
      PLUGIN.operationsRoutes,
    ],
  },
);
