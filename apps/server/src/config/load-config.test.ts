import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ConfigError,
  loadConfig,
  missingModelSettings,
  proxySettingsOf,
  redactConfig,
  secretValues,
} from "./load-config.js";
import { listSettings } from "./settings.js";

let cwd: string;
beforeEach(async () => {
  cwd = await mkdtemp(join(tmpdir(), "almanac-config-"));
});
afterEach(async () => {
  await rm(cwd, { recursive: true, force: true });
});

function expectConfigError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("loadConfig", () => {
  it("starts with nothing configured: data under ./data, 127.0.0.1:8787, no model", () => {
    const { config, file } = loadConfig({ env: {}, cwd });
    expect(file).toBeUndefined();
    expect(config.home).toBe(join(cwd, "data"));
    expect(config.server).toMatchObject({ host: "127.0.0.1", port: 8787 });
    expect(missingModelSettings(config)).toEqual(["ALMANAC_MODEL_BASE_URL", "ALMANAC_MODEL_NAME"]);
  });

  it("tells the user in one line when the context was compacted unless turned off", () => {
    expect(loadConfig({ env: {}, cwd }).config.compaction.notify).toBe(true);
    const off = loadConfig({ env: { ALMANAC_COMPACTION_NOTIFY: "false" }, cwd });
    expect(off.config.compaction.notify).toBe(false);
  });

  it("sizes the default output cap to the window and refuses a cap that leaves a prompt too little room", () => {
    expect(loadConfig({ env: {}, cwd }).config.model.maxOutputTokens).toBe(4096);
    const small = loadConfig({ env: { ALMANAC_MODEL_CONTEXT_WINDOW: "8192" }, cwd }).config.model;
    expect(small.maxOutputTokens).toBe(1024);
    const chosen = loadConfig({
      env: { ALMANAC_MODEL_CONTEXT_WINDOW: "8192", ALMANAC_MODEL_MAX_OUTPUT_TOKENS: "2000" },
      cwd,
    });
    expect(chosen.config.model.maxOutputTokens).toBe(2000);
    const error = expectConfigError(() =>
      loadConfig({
        env: { ALMANAC_MODEL_CONTEXT_WINDOW: "8192", ALMANAC_MODEL_MAX_OUTPUT_TOKENS: "5000" },
        cwd,
      }),
    );
    expect(error.message).toMatch(
      /model\.maxOutputTokens = 5000 \(from ALMANAC_MODEL_MAX_OUTPUT_TOKENS\): must be at most half of model\.contextWindow \(8192/u,
    );
  });

  it("reads environment variables with the right types", () => {
    const { config, sources } = loadConfig({
      env: {
        ALMANAC_PORT: "9000",
        ALMANAC_MODEL_BASE_URL: "http://localhost:11434/v1",
        ALMANAC_MODEL_NAME: "qwen3",
        ALMANAC_MODEL_HEADERS: '{"X-Org":"me"}',
      },
      cwd,
    });
    expect(config.server.port).toBe(9000);
    expect(config.model.headers).toEqual({ "X-Org": "me" });
    expect(missingModelSettings(config)).toEqual([]);
    expect(sources.get("server.port")).toBe("env");
  });

  it("prefers the config file's explicit value over the environment", async () => {
    await writeFile(join(cwd, "almanac.yaml"), "server:\n  port: 7000\n");
    const { config, sources, file } = loadConfig({ env: { ALMANAC_PORT: "9000" }, cwd });
    expect(config.server.port).toBe(7000);
    expect(sources.get("server.port")).toBe("file");
    expect(file).toBe(join(cwd, "almanac.yaml"));
  });

  it("reads .env but lets real environment variables win", async () => {
    await writeFile(join(cwd, ".env"), "ALMANAC_PORT=7100\nALMANAC_HOST=0.0.0.0\n");
    const { config } = loadConfig({ env: { ALMANAC_PORT: "7200" }, cwd });
    expect(config.server.port).toBe(7200);
    expect(config.server.host).toBe("0.0.0.0");
  });

  it("names the key, the env variable, the value and what is allowed when a value is wrong", () => {
    const error = expectConfigError(() =>
      loadConfig({ env: { ALMANAC_PORT: "eighty", ALMANAC_LOG_LEVEL: "loud" }, cwd }),
    );
    expect(error.code).toBe("config.invalid");
    expect(error.message).toContain(
      'ALMANAC_PORT = "eighty" (environment variable; config key server.port): expected a number',
    );
    expect(error.message).toContain(
      'ALMANAC_LOG_LEVEL = "loud" (environment variable; config key log.level): expected one of: fatal, error, warn, info',
    );
  });

  it("rejects out-of-range numbers and bad URLs", () => {
    const error = expectConfigError(() =>
      loadConfig({ env: { ALMANAC_PORT: "70000", ALMANAC_MODEL_BASE_URL: "ftp://x" }, cwd }),
    );
    expect(error.problems).toHaveLength(2);
    expect(error.message).toContain("ALMANAC_PORT = 70000");
    expect(error.message).toContain("expected a number of at most 65535");
    expect(error.message).toContain("expected an http(s) URL");
  });

  it("reads `none` as an empty list, while an empty variable leaves the default", () => {
    expect(
      loadConfig({ env: { ALMANAC_STREAM_REPLIES: "none" }, cwd }).config.channels.streamReplies,
    ).toEqual([]);
    expect(loadConfig({ env: { ALMANAC_STREAM_REPLIES: "" }, cwd }).config.channels.streamReplies).toEqual([
      "discord",
      "feishu",
      "dingtalk",
    ]);
  });

  it("reads list variables comma-separated or as JSON arrays of strings or numbers", () => {
    for (const text of ["123, 456", "[123, 456]", '["123","456"]']) {
      const { config } = loadConfig({ env: { ALMANAC_DISCORD_ALLOW_FROM: text }, cwd, dotenv: false });
      expect(config.channels.discord.allowFrom).toEqual(["123", "456"]);
    }
  });

  it("names the variable, where it was set and what is expected in plain words, never the validator's", async () => {
    const error = expectConfigError(() =>
      loadConfig({
        env: { ALMANAC_DISCORD_ALLOW_FROM: '[{"id":1}]', ALMANAC_MODEL_HEADERS: "api-key: x" },
        cwd,
        dotenv: false,
      }),
    );
    expect(error.problems).toEqual([
      expect.stringMatching(
        /^ALMANAC_MODEL_HEADERS = "\*\*\*" \(environment variable; config key model\.headers\): expected a JSON object/,
      ),
      expect.stringMatching(
        /^ALMANAC_DISCORD_ALLOW_FROM = .* \(environment variable; config key channels\.discord\.allowFrom\): expected a list: comma-separated values/,
      ),
    ]);
    expect(error.message).not.toMatch(/received|expected record|Invalid input/);
    await writeFile(join(cwd, ".env"), "ALMANAC_PORT=eighty\n");
    const fromFile = expectConfigError(() => loadConfig({ env: {}, cwd }));
    expect(fromFile.message).toContain(
      `ALMANAC_PORT = "eighty" (in ${join(cwd, ".env")}; config key server.port)`,
    );
  });

  it("checks channel credentials' shapes at start, naming the variable", () => {
    const error = expectConfigError(() =>
      loadConfig({
        env: {
          ALMANAC_DISCORD_TOKEN: "not-a-token",
          ALMANAC_FEISHU_APP_ID: "a1b2c3",
          ALMANAC_FEISHU_APP_SECRET: "s",
        },
        cwd,
        dotenv: false,
      }),
    );
    expect(error.message).toContain('ALMANAC_DISCORD_TOKEN = "***"');
    expect(error.message).toContain("three parts separated by dots");
    expect(error.message).toContain('ALMANAC_FEISHU_APP_ID = "a1b2c3"');
    expect(error.message).toContain("cli_ followed by 16 hex digits");
    expect(error.message).not.toContain("not-a-token");
  });

  it("warns about ALMANAC_ variables no setting reads, with the closest known name", () => {
    const { warnings } = loadConfig({
      env: {
        ALMANAC_MODEL_BASEURL: "http://x",
        ALMANAC_SOMETHING_ELSE_ENTIRELY: "1",
        ALMANAC_CONFIG: undefined,
      },
      cwd,
      dotenv: false,
    });
    expect(warnings).toEqual([
      expect.stringContaining(
        "ALMANAC_MODEL_BASEURL is not a setting Almanac knows, so it is ignored; did you mean ALMANAC_MODEL_BASE_URL?",
      ),
      expect.not.stringContaining("did you mean"),
    ]);
  });

  it("rejects unknown keys in the config file and lists the known ones", async () => {
    await writeFile(join(cwd, "almanac.yaml"), "server:\n  prot: 1\n");
    const error = expectConfigError(() => loadConfig({ env: {}, cwd }));
    expect(error.message).toContain("server.prot");
    expect(error.message).toContain("server.port");
  });

  it("never shows a secret's value in an error", () => {
    const error = expectConfigError(() => loadConfig({ env: { ALMANAC_ADMIN_TOKEN: "short-secret" }, cwd }));
    expect(error.message).toContain("server.adminToken");
    expect(error.message).not.toContain("short-secret");
  });

  it("fails clearly when ALMANAC_CONFIG points at a missing file or the file is not YAML", async () => {
    expect(() => loadConfig({ env: { ALMANAC_CONFIG: "nope.yaml" }, cwd })).toThrow(/no such file/);
    await writeFile(join(cwd, "bad.yaml"), "server: [unclosed");
    expect(() => loadConfig({ env: { ALMANAC_CONFIG: "bad.yaml" }, cwd })).toThrow(/not valid YAML/);
  });

  it("masks header values and passwords in URLs in the redacted view and the list of secrets", () => {
    const { config } = loadConfig({
      env: {
        ALMANAC_MODEL_BASE_URL: "https://me:hunter2-pass@llm.example/v1",
        ALMANAC_MODEL_HEADERS: '{"api-key":"azure-key-123"}',
      },
      cwd,
      dotenv: false,
    });
    const text = JSON.stringify(redactConfig(config));
    expect(text).toContain("https://me:***@llm.example/v1");
    expect(text).toContain('"api-key":"***"');
    expect(text).not.toContain("hunter2-pass");
    expect(text).not.toContain("azure-key-123");
    expect(secretValues(config)).toEqual(expect.arrayContaining(["hunter2-pass", "azure-key-123"]));
  });

  it("reads the standard proxy variables, lower-case spellings too, and sends loopback directly", () => {
    const { config } = loadConfig({
      env: { https_proxy: "http://u:p4ss@proxy.corp:3128", NO_PROXY: ".corp.example" },
      cwd,
      dotenv: false,
    });
    expect(proxySettingsOf(config)).toEqual({
      httpsProxy: "http://u:p4ss@proxy.corp:3128",
      noProxy: "localhost,127.0.0.1,::1,.corp.example",
    });
    expect(JSON.stringify(redactConfig(config))).not.toContain("p4ss");
    expect(secretValues(config)).toContain("p4ss");
  });

  it("masks secrets in the redacted view", () => {
    const { config } = loadConfig({
      env: { ALMANAC_MODEL_API_KEY: "sk-very-secret", ALMANAC_ADMIN_TOKEN: "a-long-admin-token-123" },
      cwd,
    });
    const text = JSON.stringify(redactConfig(config));
    expect(text).not.toContain("sk-very-secret");
    expect(text).not.toContain("a-long-admin-token-123");
  });
});

describe("MCP servers in the configuration", () => {
  it("reads mcpServers from the config file, the variable, and the file other clients use", async () => {
    await writeFile(
      join(cwd, "almanac.yaml"),
      "mcpServers:\n  time:\n    command: uvx\n    args: [mcp-server-time]\ntools:\n  mcpConfig: mcp.json\n",
    );
    await writeFile(
      join(cwd, "mcp.json"),
      JSON.stringify({
        mcpServers: {
          calendar: { url: "https://cal.example/mcp", headers: { Authorization: "Bearer cal-secret-123" } },
        },
      }),
    );
    const { config } = loadConfig({ env: {}, cwd });
    expect(Object.keys(config.mcpServers)).toEqual(["time", "calendar"]);
    expect(config.mcpServers.time).toMatchObject({ command: "uvx", approval: "always", sharedChats: false });
    expect(secretValues(config)).toContain("Bearer cal-secret-123");
    const shown = JSON.stringify(redactConfig(config));
    expect(shown).not.toContain("cal-secret-123");
    expect(shown).toContain('"Authorization":"***"');

    const fromEnv = loadConfig({
      env: { ALMANAC_MCP_SERVERS: '{"files":{"command":"npx","args":["-y","x"],"env":{"TOKEN":"tok-456"}}}' },
      cwd: await mkdtemp(join(tmpdir(), "almanac-config-")),
    });
    expect(fromEnv.config.mcpServers.files?.env).toEqual({ TOKEN: "tok-456" });
    expect(secretValues(fromEnv.config)).toContain("tok-456");
  });

  it("names the server, the problem and never a secret when a server is configured wrongly", async () => {
    const error = expectConfigError(() =>
      loadConfig({
        env: {
          ALMANAC_MCP_SERVERS:
            '{"both":{"command":"x","url":"https://a.example","env":{"K":"secret-value-789"}}}',
        },
        cwd,
      }),
    );
    expect(error.message).toContain("ALMANAC_MCP_SERVERS");
    expect(error.message).toContain("either command");
    expect(error.message).not.toContain("secret-value-789");
  });

  it("fails clearly when the MCP file is missing, not JSON, or repeats a server", async () => {
    expect(
      expectConfigError(() => loadConfig({ env: { ALMANAC_MCP_CONFIG: "nope.json" }, cwd })).message,
    ).toMatch(/ALMANAC_MCP_CONFIG.*no such file/);
    await writeFile(join(cwd, "bad.json"), "{not json");
    expect(
      expectConfigError(() => loadConfig({ env: { ALMANAC_MCP_CONFIG: "bad.json" }, cwd })).message,
    ).toContain("cannot read");
    await writeFile(join(cwd, "mcp.json"), JSON.stringify({ mcpServers: { a: { command: "x" } } }));
    const twice = expectConfigError(() =>
      loadConfig({
        env: { ALMANAC_MCP_CONFIG: "mcp.json", ALMANAC_MCP_SERVERS: '{"a":{"command":"y"}}' },
        cwd,
      }),
    );
    expect(twice.message).toContain("defined both");
  });
});

describe("settings", () => {
  it("documents every key with a unique ALMANAC_ environment variable (the standard proxy variables aside)", () => {
    const settings = listSettings();
    expect(settings.length).toBeGreaterThan(15);
    const envs = settings.map((setting) => setting.env);
    expect(new Set(envs).size).toBe(envs.length);
    for (const setting of settings) {
      expect(setting.env).toMatch(/^(ALMANAC_[A-Z0-9_]+|HTTPS?_PROXY|NO_PROXY)$/);
      expect(setting.description.length).toBeGreaterThan(10);
    }
  });
});
