import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { ALMANAC_PLUGINS, buildApp } from "./app.js";
import { loadConfig } from "./config/load-config.js";
import { createLazySchemaCompilers, type LazySchemaCompilers } from "./http/lazy-schema-compilers.js";
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
async function build(
  lines: string[] = [],
  env: Record<string, string> = {},
  schemaCompilers?: LazySchemaCompilers,
): Promise<FastifyInstance> {
  home ??= await mkdtemp(join(tmpdir(), "almanac-app-"));
  const { config } = loadConfig({
    env: { ALMANAC_HOME: home, ALMANAC_ADMIN_TOKEN: TOKEN, ALMANAC_LOG_LEVEL: "debug", ...env },
    cwd: home,
  });
  const logDestination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return buildApp(config, { logDestination, ...(schemaCompilers ? { schemaCompilers } : {}) });
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

  it("shuts down in the order of the plugin graph: 503 first, turns drained, then channels, sessions, stats, summarizer, index, lock", async () => {
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
      PLUGIN.tools,
      PLUGIN.stats,
      PLUGIN.summarizer,
      PLUGIN.memory,
      PLUGIN.config,
    ]);
  });

  it("closes what had started and releases the data directory when a plugin fails to start", async () => {
    home = await mkdtemp(join(tmpdir(), "almanac-app-"));
    // The channels plugin cannot open its dedup log where a directory stands.
    await mkdir(join(home, "state", "channel-dedup.jsonl"), { recursive: true });
    const lines: string[] = [];
    await expect(build(lines)).rejects.toMatchObject({ code: "EISDIR" });
    expect(existsSync(join(home, "state", "almanac.lock"))).toBe(false);
    const closed = lines.flatMap((line) => {
      const entry = JSON.parse(line) as { msg?: string; plugin?: string };
      return entry.msg === "plugin closed" ? [entry.plugin] : [];
    });
    expect(closed).toEqual([
      PLUGIN.sessions,
      PLUGIN.tools,
      PLUGIN.stats,
      PLUGIN.summarizer,
      PLUGIN.memory,
      PLUGIN.config,
    ]);
  });

  it("gives a webhook route to the channels that take webhooks in their configuration, and to no other", async () => {
    const feishu = {
      ALMANAC_FEISHU_APP_ID: "cli_0123456789abcdef",
      ALMANAC_FEISHU_APP_SECRET: "app-secret-0123456789",
    };
    const webhookRoutes = (instance: FastifyInstance) =>
      instance.routeTable().filter((route) => route.url.startsWith("/channels/"));
    app = await build([], {
      ...feishu,
      ALMANAC_FEISHU_MODE: "webhook",
      ALMANAC_FEISHU_ENCRYPT_KEY: "encrypt-key-0123456789",
    });
    expect(webhookRoutes(app)).toEqual([{ method: "POST", url: "/channels/feishu/webhook", public: true }]);
    await app.close();
    app = await build([], { ...feishu, ALMANAC_FEISHU_MODE: "websocket" });
    expect(webhookRoutes(app)).toEqual([]);
  });

  it("logs one line per answered request, probes and scrapes at debug, with the query's values redacted", async () => {
    const lines: string[] = [];
    app = await build(lines, { ALMANAC_LOG_LEVEL: "info" });
    const auth = { authorization: `Bearer ${TOKEN}` };
    await app.inject({ method: "GET", url: "/healthz" });
    await app.inject({ method: "GET", url: "/metrics", headers: auth });
    await app.inject({ method: "GET", url: "/api/memory/search?q=secret-words", headers: auth });
    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => entry.req !== undefined);
    expect(requests).toEqual([
      expect.objectContaining({
        level: 30,
        msg: "request completed",
        req: expect.objectContaining({ method: "GET", url: "/api/memory/search?q=[redacted]" }),
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
      }),
    ]);
    expect(lines.join("")).not.toContain("incoming request");
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

describe("createLazySchemaCompilers", () => {
  it("compiles every schema of every route of the server without an error", async () => {
    const compilers = createLazySchemaCompilers();
    app = await build([], {}, compilers);
    expect(compilers.compileAll()).toBeGreaterThan(15);
  });

  it("validates, coerces and serializes exactly as fastify's own compilers, on a route's first request", async () => {
    const schema = {
      params: { type: "object", properties: { id: { type: "integer" } } },
      querystring: {
        type: "object",
        properties: { limit: { type: "integer", minimum: 1, default: 10 } },
        additionalProperties: false,
      },
      headers: {
        type: "object",
        required: ["X-Client"],
        properties: { "X-Client": { type: "string", minLength: 2 } },
      },
      body: {
        type: "object",
        required: ["name"],
        properties: {
          name: { type: "string", minLength: 2 },
          tags: { type: "array", items: { type: "string" } },
        },
      },
      response: {
        200: {
          type: "object",
          properties: { id: { type: "integer" }, name: { type: "string" }, limit: { type: "integer" } },
        },
      },
    };
    const compilers = createLazySchemaCompilers();
    const lazy = Fastify({ schemaController: { compilersFactory: compilers } });
    const eager = Fastify();
    for (const instance of [lazy, eager]) {
      instance.post("/items/:id", { schema }, async (request) => ({
        ...(request.params as object),
        ...(request.query as object),
        ...(request.body as object),
        secret: "left out by the response schema",
      }));
      await instance.ready();
    }
    const client = { "x-client": "app" };
    const requests = [
      { url: "/items/7?limit=3", payload: { name: "plum", tags: ["a"] }, headers: client },
      { url: "/items/7", payload: { name: "plum" }, headers: { "X-CLIENT": "app" } },
      { url: "/items/7", payload: { name: "plum" }, headers: {} },
      { url: "/items/7", payload: { name: "plum" }, headers: { "x-client": "a" } },
      { url: "/items/seven", payload: { name: "plum" }, headers: client },
      { url: "/items/7?limit=0", payload: { name: "plum" }, headers: client },
      { url: "/items/7?other=1", payload: { name: "plum" }, headers: client },
      { url: "/items/7", payload: { name: "p" }, headers: client },
      { url: "/items/7", payload: { tags: [1] }, headers: client },
    ];
    for (const request of requests) {
      const [fromLazy, fromEager] = await Promise.all(
        [lazy, eager].map((instance) => instance.inject({ method: "POST", ...request })),
      );
      expect({ status: fromLazy?.statusCode, body: fromLazy?.json() }).toEqual({
        status: fromEager?.statusCode,
        body: fromEager?.json(),
      });
    }
    expect((await lazy.inject({ method: "POST", ...requests[0] })).json()).toEqual({
      id: 7,
      name: "plum",
      limit: 3,
    });
    // Params, querystring, headers, body and the 200 response: five schemas, each compiled once.
    expect(compilers.compileAll()).toBe(5);
    await Promise.all([lazy.close(), eager.close()]);
  });
});
