import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { ALMANAC_PLUGINS, buildApp } from "./app.js";
import { loadConfig } from "./config/load-config.js";
import { PLUGIN } from "./plugins/plugin-names.js";
import { sessionsPlugin } from "./plugins/sessions-plugin.js";

const TOKEN = "app-test-admin-token-0123456789";
let home: string | undefined;
let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
  if (home) await rm(home, { recursive: true, force: true });
  home = undefined;
});

/** A server built over a fresh data directory without a model (nothing to contact), logging into `lines`. */
async function build(lines: string[] = []): Promise<FastifyInstance> {
  home ??= await mkdtemp(join(tmpdir(), "almanac-app-"));
  const { config } = loadConfig({
    env: { ALMANAC_HOME: home, ALMANAC_ADMIN_TOKEN: TOKEN, ALMANAC_LOG_LEVEL: "debug" },
    cwd: home,
  });
  const logDestination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return buildApp(config, { logDestination });
}

/** The metadata fastify-plugin attaches (name and declared dependencies). */
function metaOf(plugin: unknown): { name?: string; dependencies?: string[] } {
  return (
    (plugin as Record<symbol, { name?: string; dependencies?: string[] }>)[Symbol.for("plugin-meta")] ?? {}
  );
}

describe("buildApp", () => {
  it("builds the whole server without listening: requests go through inject(), and close() releases the data directory", async () => {
    app = await build();
    expect(app.server.listening).toBe(false);
    const health = await app.inject({ method: "GET", url: "/healthz" });
    expect(health.statusCode).toBe(200);
    const unauthorized = await app.inject({ method: "GET", url: "/api/info" });
    expect(unauthorized.statusCode).toBe(401);
    const info = await app.inject({
      method: "GET",
      url: "/api/info",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(info.statusCode).toBe(200);
    expect(info.json()).toMatchObject({ model: { configured: false } });
    const chat = await app.inject({
      method: "POST",
      url: "/v1/chat/completions",
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { model: "almanac", messages: [{ role: "user", content: "hi" }] },
    });
    expect(chat.statusCode).toBe(503);
    // No channel is configured, and none was contacted.
    expect(app.channels.statuses().every((status) => status.state === "disabled")).toBe(true);
    const lock = join(home as string, "state", "almanac.lock");
    expect(existsSync(lock)).toBe(true);
    await app.close();
    app = undefined;
    // The home lock was released: another server may take the directory.
    expect(existsSync(lock)).toBe(false);
  });

  it("shuts down in the order of the plugin graph: 503 first, turns drained, channels, sessions, summarizer, memory, lock", async () => {
    const lines: string[] = [];
    app = await build(lines);
    await app.close();
    app = undefined;
    const steps = lines
      .map((line) => JSON.parse(line) as { msg?: string; plugin?: string })
      .flatMap((entry) =>
        entry.msg === "plugin closed"
          ? [entry.plugin]
          : entry.msg === "shutting down: finishing running turns" || entry.msg === "turns drained"
            ? [entry.msg]
            : [],
      );
    expect(steps).toEqual([
      "shutting down: finishing running turns",
      "turns drained",
      PLUGIN.channels,
      PLUGIN.sessions,
      PLUGIN.stats,
      PLUGIN.summarizer,
      PLUGIN.memory,
      PLUGIN.config,
    ]);
  });

  it("registers every plugin after the plugins it declares as dependencies", () => {
    const registered: string[] = [PLUGIN.config];
    for (const plugin of ALMANAC_PLUGINS) {
      const meta = metaOf(plugin);
      for (const dependency of meta.dependencies ?? []) expect(registered).toContain(dependency);
      expect(meta.name).toBeDefined();
      registered.push(meta.name as string);
    }
    expect(registered).toEqual(Object.values(PLUGIN));
  });

  it("refuses to start a plugin whose dependency is missing, naming both", async () => {
    const bare = Fastify();
    bare.register(sessionsPlugin);
    await expect(bare.ready()).rejects.toMatchObject({
      code: "FST_ERR_PLUGIN_DEPENDENCY_NOT_REGISTERED",
      message: expect.stringMatching(/almanac-config.*almanac-sessions/),
    });
    await bare.close().catch(() => {});
  });
});
