import { UserError } from "@almanac/core";
import type { FastifyInstance } from "fastify";
import type pino from "pino";
import { buildApp } from "./app.js";
import type { AlmanacConfig } from "./config/config-schema.js";
import { loadConfig } from "./config/load-config.js";

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

/**
 * Loads the configuration, builds the app (every service a plugin, see `buildApp`), listens, then connects
 * the chat channels. Stopping is `app.close()`: the plugins close in reverse order of registration.
 */
export async function startServer(options: StartServerOptions): Promise<ServerHandle> {
  const { config, warnings } = loadConfig({ env: options.env, cwd: options.cwd });
  const app = await buildApp(config, {
    ...(options.logDestination ? { logDestination: options.logDestination } : {}),
    ...(options.announce ? { announce: options.announce } : {}),
  });
  try {
    await app.listen({ host: config.server.host, port: config.server.port });
  } catch (error) {
    app.shutdown.begin({ deadlineMs: 0 });
    await app.close().catch(() => {});
    throw listenError(error, config.server.host, config.server.port);
  }
  const address = app.server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.server.port;
  const url = `http://${config.server.host.includes(":") ? `[${config.server.host}]` : config.server.host}:${port}`;
  await app.channels.start();
  // Tasks fire once the channels can deliver (a reminder missed while the server was down runs now).
  await app.startTasks();
  app.log.info({ url, home: config.home, model: config.model.name ?? null }, "almanac listening");
  for (const warning of warnings) app.log.warn({}, warning);
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= app.close().then(() => app.log.info({}, "stopped"));
    return closing;
  };
  return { app, url, config, adminToken: app.adminToken, close };
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
