import fp from "fastify-plugin";
import type { AlmanacConfig } from "../config/config-schema.js";
import type { HomeLock } from "../home-lock.js";
import type { StorageHealth } from "../storage-health.js";
import { PLUGIN } from "./plugin-names.js";

/** Whether shutdown began, and how long running work may take to finish. */
export interface ShutdownState {
  /** True once shutdown began: new requests get 503, turns cut short answer `server.shutting_down`. */
  isShuttingDown(): boolean;
  /** How long running turns, replies and summaries may take to finish (0 after a failed start). */
  deadlineMs(): number;
  /** Starts the shutdown (idempotent); a deadline given here replaces the configured one. */
  begin(options?: { readonly deadlineMs?: number }): void;
}

declare module "fastify" {
  interface FastifyInstance {
    /** The loaded configuration (see config-schema.ts). */
    config: AlmanacConfig;
    /** The admin token every `/api`, `/v1` and `/metrics` request must present. */
    adminToken: string;
    /** This server's version (apps/server/package.json). */
    almanacVersion: string;
    /** The data directory's storage state: a full disk answers 507 `storage.full` and turns `/readyz` red. */
    storage: StorageHealth;
    shutdown: ShutdownState;
  }
}

/** Options of {@link configPlugin}: what `buildApp` prepared before the server existed. */
export interface ConfigPluginOptions {
  readonly config: AlmanacConfig;
  readonly adminToken: string;
  readonly version: string;
  /** Released when the server has closed, after every other plugin. */
  readonly homeLock: HomeLock;
  readonly storage: StorageHealth;
  readonly shutdown: ShutdownState;
}

/** A shutdown state with the configured deadline. */
export function createShutdownState(configuredDeadlineMs: number): ShutdownState {
  let started = false;
  let deadline = configuredDeadlineMs;
  return {
    isShuttingDown: () => started,
    deadlineMs: () => deadline,
    begin(options = {}) {
      if (options.deadlineMs !== undefined) deadline = options.deadlineMs;
      started = true;
    },
  };
}

/**
 * The configuration and the data directory: registered first, so its `onClose` (releasing the home lock)
 * runs last, once everything that writes to the directory has closed.
 */
export const configPlugin = fp<ConfigPluginOptions>(
  async (app, options) => {
    app.decorate("config", options.config);
    app.decorate("adminToken", options.adminToken);
    app.decorate("almanacVersion", options.version);
    app.decorate("storage", options.storage);
    app.decorate("shutdown", options.shutdown);
    app.addHook("onClose", async () => {
      await options.homeLock.release();
      app.log.debug({ plugin: PLUGIN.config }, "plugin closed");
    });
  },
  { name: PLUGIN.config, fastify: "5.x" },
);
