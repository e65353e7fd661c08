import { z } from "zod";

/** What the docs and the loader need to know about one setting, attached to its schema. */
export interface SettingMeta {
  /** Environment variable that sets this key when the config file does not. */
  readonly env: string;
  readonly description: string;
  /** Secrets are masked in logs, errors and the admin API. */
  readonly secret?: boolean;
  /**
   * A map whose values may be credentials (HTTP headers such as `api-key`): its keys are shown, its values
   * masked like secrets.
   */
  readonly secretValues?: boolean;
  /** Example value for README and `.env.example` when there is no default. */
  readonly example?: string;
  /** Other spellings of the variable read when `env` is unset (the lower-case proxy variables). */
  readonly envAliases?: readonly string[];
}

/** A setting registry: one schema per key carries its env name and description (single source for docs). */
export const settingRegistry = z.registry<SettingMeta>();

function setting<T extends z.ZodType>(schema: T, meta: SettingMeta): T {
  settingRegistry.add(schema, meta);
  return schema;
}

const port = z.number().int().min(0).max(65535);
const positiveInt = z.number().int().positive();
const httpUrl = z.url({ protocol: /^https?$/, error: "expected an http(s) URL" });

/** A Discord bot token: three base64url parts separated by dots (the only shape Discord issues). */
export const DISCORD_TOKEN_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]+$/;
/** A Feishu/Lark app id: `cli_` and 16 hex digits (the SDK's long connection silently does nothing otherwise). */
export const FEISHU_APP_ID_SHAPE = /^cli_[0-9a-f]{16}$/;

/** A fresh schema per use: the registry keys metadata by schema instance. */
const idList = () => z.array(z.string().min(1)).default([]);

/** Access settings every channel has (applied by the server's gate to every adapter alike). */
function accessSettings(prefix: string, label: string) {
  return {
    dmPolicy: setting(z.enum(["open", "allowlist"]).default("allowlist"), {
      env: `${prefix}_DM_POLICY`,
      description: `Who may talk to the bot in ${label} direct messages: \`allowlist\` (only ${prefix}_ALLOW_FROM) or \`open\` (anyone).`,
    }),
    allowFrom: setting(idList(), {
      env: `${prefix}_ALLOW_FROM`,
      description: `${label} user ids allowed to talk to the bot (comma-separated). Applies to DMs and, when set, to groups too.`,
      example: "1234567890,2345678901",
    }),
    groupPolicy: setting(z.enum(["open", "allowlist", "disabled"]).default("allowlist"), {
      env: `${prefix}_GROUP_POLICY`,
      description: `Which ${label} groups/channels the bot answers in: \`allowlist\` (only ${prefix}_GROUPS), \`open\` (all) or \`disabled\`.`,
    }),
    groups: setting(idList(), {
      env: `${prefix}_GROUPS`,
      description: `${label} group/channel ids the bot answers in (comma-separated).`,
      example: "987654321,876543210",
    }),
    requireMention: setting(z.boolean().default(true), {
      env: `${prefix}_REQUIRE_MENTION`,
      description: `In ${label} groups, answer only when the bot is @-mentioned.`,
    }),
    noMentionGroups: setting(idList(), {
      env: `${prefix}_NO_MENTION_GROUPS`,
      description: `${label} group ids where the bot answers without being mentioned (overrides ${prefix}_REQUIRE_MENTION).`,
      example: "987654321,876543210",
    }),
    trustedGroups: setting(idList(), {
      env: `${prefix}_TRUSTED_GROUPS`,
      description: `${label} group ids trusted with the owner's private memory (MEMORY.md, daily logs, file tools), like a DM from ${prefix}_ALLOW_FROM. Other groups get only their own log (docs/memory-files.md).`,
      example: "987654321,876543210",
    }),
  };
}

/** The whole Almanac configuration. Defaults let the server start with nothing configured. */
export const configSchema = z.strictObject({
  home: setting(z.string().min(1).default("./data"), {
    env: "ALMANAC_HOME",
    description: "Data directory: workspace (MEMORY.md, memory/), sessions/, state/.",
  }),
  server: z
    .strictObject({
      host: setting(z.string().min(1).default("127.0.0.1"), {
        env: "ALMANAC_HOST",
        description: "Address to bind. Use 0.0.0.0 to accept connections from other machines (Docker does).",
      }),
      port: setting(port.default(8787), { env: "ALMANAC_PORT", description: "TCP port of the HTTP server." }),
      adminToken: setting(z.string().min(16, "must be at least 16 characters").optional(), {
        env: "ALMANAC_ADMIN_TOKEN",
        description:
          "Bearer token for /api and /v1. When unset, one is generated on first start, stored in <home>/admin-token (mode 0600) and printed once.",
        secret: true,
        example: "change-me-to-a-long-random-string",
      }),
      bodyLimitBytes: setting(positiveInt.default(1_048_576), {
        env: "ALMANAC_BODY_LIMIT_BYTES",
        description: "Largest accepted request body; larger requests get 413.",
      }),
      maxMessageChars: setting(positiveInt.default(32_000), {
        env: "ALMANAC_MAX_MESSAGE_CHARS",
        description:
          "Longest accepted user message; longer ones get a clear 413 instead of reaching the model.",
      }),
    })
    .prefault({}),
  log: z
    .strictObject({
      level: setting(z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"), {
        env: "ALMANAC_LOG_LEVEL",
        description: "pino log level.",
      }),
    })
    .prefault({}),
  model: z
    .strictObject({
      baseUrl: setting(httpUrl.optional(), {
        env: "ALMANAC_MODEL_BASE_URL",
        description:
          "OpenAI-compatible endpoint (OpenAI, DashScope, vLLM, Ollama, LM Studio…). Unset: no model yet.",
        example: "https://api.openai.com/v1",
      }),
      apiKey: setting(z.string().min(1).optional(), {
        env: "ALMANAC_MODEL_API_KEY",
        description: "API key for the model endpoint (local servers often need none).",
        secret: true,
        example: "sk-...",
      }),
      name: setting(z.string().min(1).optional(), {
        env: "ALMANAC_MODEL_NAME",
        description: "Model name sent with every request.",
        example: "gpt-4.1-mini",
      }),
      contextWindow: setting(positiveInt.default(128_000), {
        env: "ALMANAC_MODEL_CONTEXT_WINDOW",
        description: "The model's context window in tokens.",
      }),
      maxOutputTokens: setting(positiveInt.default(4096), {
        env: "ALMANAC_MODEL_MAX_OUTPUT_TOKENS",
        description:
          "Largest reply the model may write (also reserved out of the window). Unset: 4096, or an eighth of the window when that is smaller; at most half the window.",
      }),
      outputCapParameter: setting(
        z.enum(["max_tokens", "max_completion_tokens", "off"]).default("max_tokens"),
        {
          env: "ALMANAC_MODEL_OUTPUT_CAP_PARAMETER",
          description:
            "How the output cap (maxOutputTokens) is sent with every request: max_tokens (most compatible servers), max_completion_tokens (OpenAI's newer models), or off (not sent; prompts are still sized to leave it free).",
        },
      ),
      timeoutMs: setting(positiveInt.default(120_000), {
        env: "ALMANAC_MODEL_TIMEOUT_MS",
        description: "Per-request timeout for model calls.",
      }),
      maxRetries: setting(z.number().int().min(0).max(10).default(3), {
        env: "ALMANAC_MODEL_MAX_RETRIES",
        description: "Retries on rate limits, timeouts and server errors (Retry-After honoured).",
      }),
      headers: setting(z.record(z.string(), z.string()).default({}), {
        env: "ALMANAC_MODEL_HEADERS",
        secretValues: true,
        description: "Extra HTTP headers for the model endpoint, as a JSON object.",
        example: '{"X-Org":"me"}',
      }),
    })
    .prefault({}),
  network: z
    .strictObject({
      httpsProxy: setting(httpUrl.optional(), {
        env: "HTTPS_PROXY",
        envAliases: ["https_proxy"],
        description:
          "Proxy for https:// model and embedding endpoints (the standard variable, read by Almanac itself). Credentials in it are masked in every view.",
        example: "http://proxy.example:3128",
      }),
      httpProxy: setting(httpUrl.optional(), {
        env: "HTTP_PROXY",
        envAliases: ["http_proxy"],
        description: "Proxy for http:// model and embedding endpoints.",
        example: "http://proxy.example:3128",
      }),
      noProxy: setting(z.string().optional(), {
        env: "NO_PROXY",
        envAliases: ["no_proxy"],
        description:
          "Hosts reached without the proxy: comma-separated names, .domains, host:port, or *. localhost, 127.0.0.1 and ::1 are always direct.",
        example: "ollama,.corp.example",
      }),
    })
    .prefault({}),
  compaction: z
    .strictObject({
      model: setting(z.string().min(1).optional(), {
        env: "ALMANAC_COMPACTION_MODEL",
        description:
          "Model (on the same endpoint) that writes the rolling summary; a cheaper one is fine. Unset: the chat model.",
        example: "gpt-4.1-nano",
      }),
      notify: setting(z.boolean().default(true), {
        env: "ALMANAC_COMPACTION_NOTIFY",
        description:
          "Tell the user in one line when the context was compacted (before → after tokens); false turns it off.",
      }),
      share: setting(z.number().gt(0).lt(1).optional(), {
        env: "ALMANAC_COMPACTION_SHARE",
        description:
          "Fixed share of the usable window at which compaction starts; unset uses the tier table in docs/compaction.md.",
        example: "0.7",
      }),
      ceilingTokens: setting(positiveInt.default(200_000), {
        env: "ALMANAC_COMPACTION_CEILING_TOKENS",
        description:
          "Absolute ceiling of the compaction threshold, so very large windows still compact at a sane size.",
      }),
    })
    .prefault({}),
  agent: z
    .strictObject({
      systemPrompt: setting(z.string().min(1).optional(), {
        env: "ALMANAC_SYSTEM_PROMPT",
        description: "Replaces the built-in system prompt.",
        example: "You are a helpful assistant.",
      }),
      maxIterations: setting(z.number().int().min(1).max(100).default(16), {
        env: "ALMANAC_AGENT_MAX_ITERATIONS",
        description: "Reasoning steps per turn before the agent stops and says so.",
      }),
    })
    .prefault({}),
  sessions: z
    .strictObject({
      maxConcurrentTurns: setting(positiveInt.default(8), {
        env: "ALMANAC_MAX_CONCURRENT_TURNS",
        description: "Turns running at once across all sessions (one at a time per session always).",
      }),
      queueLimit: setting(positiveInt.default(16), {
        env: "ALMANAC_SESSION_QUEUE_LIMIT",
        description: "Messages that may wait behind a busy session before new ones get a 'busy' reply.",
      }),
      idleUnloadMs: setting(positiveInt.default(900_000), {
        env: "ALMANAC_SESSION_IDLE_UNLOAD_MS",
        description: "Idle time after which a session is dropped from memory (it stays on disk).",
      }),
      turnTimeoutMs: setting(positiveInt.default(600_000), {
        env: "ALMANAC_TURN_TIMEOUT_MS",
        description: "Longest a single turn may run before it is cancelled.",
      }),
    })
    .prefault({}),
  embedding: z
    .strictObject({
      baseUrl: setting(httpUrl.optional(), {
        env: "ALMANAC_EMBEDDING_BASE_URL",
        description:
          "OpenAI-compatible embeddings endpoint (OpenAI, DashScope, Ollama, vLLM, TEI…). Unset: full-text search only.",
        example: "https://api.openai.com/v1",
      }),
      apiKey: setting(z.string().min(1).optional(), {
        env: "ALMANAC_EMBEDDING_API_KEY",
        description: "API key for the embeddings endpoint.",
        secret: true,
        example: "sk-...",
      }),
      model: setting(z.string().min(1).optional(), {
        env: "ALMANAC_EMBEDDING_MODEL",
        description: "Embedding model name.",
        example: "text-embedding-3-small",
      }),
      dimensions: setting(positiveInt.optional(), {
        env: "ALMANAC_EMBEDDING_DIMENSIONS",
        description: "Vector size to request (models that support it); unset: the model's own.",
        example: "1024",
      }),
    })
    .prefault({}),
  index: z
    .strictObject({
      backend: setting(z.enum(["sqlite", "qdrant"]).default("sqlite"), {
        env: "ALMANAC_INDEX_BACKEND",
        description: "Memory index backend: the embedded SQLite file (state/index.sqlite) or Qdrant.",
      }),
      qdrantUrl: setting(httpUrl.optional(), {
        env: "ALMANAC_QDRANT_URL",
        description: "Qdrant URL when ALMANAC_INDEX_BACKEND=qdrant.",
        example: "http://qdrant:6333",
      }),
      qdrantApiKey: setting(z.string().min(1).optional(), {
        env: "ALMANAC_QDRANT_API_KEY",
        description: "Qdrant API key, if the server requires one.",
        secret: true,
        example: "qdrant-key",
      }),
      qdrantCollection: setting(z.string().min(1).default("almanac-memory"), {
        env: "ALMANAC_QDRANT_COLLECTION",
        description: "Qdrant collection for this workspace (one per workspace).",
      }),
    })
    .prefault({}),
  memory: z
    .strictObject({
      timeZone: setting(
        z
          .string()
          .refine(
            (zone) => {
              try {
                new Intl.DateTimeFormat("en", { timeZone: zone });
                return true;
              } catch {
                return false;
              }
            },
            { error: "expected an IANA time zone such as Asia/Shanghai or Europe/Berlin" },
          )
          .optional(),
        {
          env: "ALMANAC_TIME_ZONE",
          description: "Time zone of the daily logs (memory/YYYY-MM-DD.md). Unset: the server's zone.",
          example: "Asia/Shanghai",
        },
      ),
      contextTokens: setting(z.number().int().min(0).default(2000), {
        env: "ALMANAC_MEMORY_CONTEXT_TOKENS",
        description:
          "Budget for the excerpt of MEMORY.md and today's/yesterday's logs loaded into the system prompt.",
      }),
      summarizerModel: setting(z.string().min(1).optional(), {
        env: "ALMANAC_SUMMARIZER_MODEL",
        description:
          "Model (on the same endpoint) that merges compacted turns into the daily logs. Unset: the chat model.",
        example: "gpt-4.1-mini",
      }),
      summarizerMaxAttempts: setting(z.number().int().min(1).max(20).default(3), {
        env: "ALMANAC_SUMMARIZER_MAX_ATTEMPTS",
        description:
          "Attempts per summarizer job before it is parked (visible in /api/summarizer/jobs; retry there).",
      }),
    })
    .prefault({}),
  channels: z
    .strictObject({
      discord: z
        .strictObject({
          token: setting(
            z
              .string()
              .regex(DISCORD_TOKEN_SHAPE, {
                error:
                  "expected a Discord bot token: three parts separated by dots (copy it again from the Developer Portal → Bot → Reset Token)",
              })
              .optional(),
            {
              env: "ALMANAC_DISCORD_TOKEN",
              description: "Discord bot token; setting it enables the Discord channel.",
              secret: true,
              example: "MTIz...",
            },
          ),
          apiBaseUrl: setting(httpUrl.optional(), {
            env: "ALMANAC_DISCORD_API_BASE_URL",
            description: "Discord REST base URL (default Discord's; set only for testing).",
            example: "https://discord.com/api",
          }),
          ...accessSettings("ALMANAC_DISCORD", "Discord"),
        })
        .prefault({}),
      feishu: z
        .strictObject({
          appId: setting(
            z
              .string()
              .regex(FEISHU_APP_ID_SHAPE, {
                error:
                  "expected a Feishu/Lark app id: cli_ followed by 16 hex digits (Developer Console → Credentials & Basic Info)",
              })
              .optional(),
            {
              env: "ALMANAC_FEISHU_APP_ID",
              description: "Feishu/Lark app id (cli_…); with the secret, enables the Feishu channel.",
              example: "cli_a1b2c3d4e5f60718",
            },
          ),
          appSecret: setting(z.string().min(1).optional(), {
            env: "ALMANAC_FEISHU_APP_SECRET",
            description: "Feishu/Lark app secret.",
            secret: true,
            example: "secret",
          }),
          mode: setting(z.enum(["websocket", "webhook"]).default("websocket"), {
            env: "ALMANAC_FEISHU_MODE",
            description:
              "Long connection (`websocket`, no public URL needed) or `webhook` (POST /channels/feishu/webhook).",
          }),
          encryptKey: setting(z.string().min(1).optional(), {
            env: "ALMANAC_FEISHU_ENCRYPT_KEY",
            description: "Event encrypt key (webhook mode; also used to verify signatures).",
            secret: true,
            example: "key",
          }),
          verificationToken: setting(z.string().min(1).optional(), {
            env: "ALMANAC_FEISHU_VERIFICATION_TOKEN",
            description: "Event verification token (webhook mode).",
            secret: true,
            example: "token",
          }),
          domain: setting(httpUrl.default("https://open.feishu.cn"), {
            env: "ALMANAC_FEISHU_DOMAIN",
            description:
              "Open platform base URL: https://open.feishu.cn (Feishu) or https://open.larksuite.com (Lark).",
          }),
          ...accessSettings("ALMANAC_FEISHU", "Feishu"),
        })
        .prefault({}),
      dingtalk: z
        .strictObject({
          clientId: setting(z.string().min(1).optional(), {
            env: "ALMANAC_DINGTALK_CLIENT_ID",
            description:
              "DingTalk app key (client id); with the secret, enables the DingTalk channel (Stream mode).",
            example: "dingxxxxxxxx",
          }),
          clientSecret: setting(z.string().min(1).optional(), {
            env: "ALMANAC_DINGTALK_CLIENT_SECRET",
            description: "DingTalk app secret (client secret).",
            secret: true,
            example: "secret",
          }),
          robotCode: setting(z.string().min(1).optional(), {
            env: "ALMANAC_DINGTALK_ROBOT_CODE",
            description: "Robot code for OpenAPI replies (defaults to the client id).",
            example: "dingxxxxxxxx",
          }),
          gatewayUrl: setting(httpUrl.optional(), {
            env: "ALMANAC_DINGTALK_GATEWAY_URL",
            description: "Stream gateway base URL (default DingTalk's; set only for testing).",
            example: "https://api.dingtalk.com",
          }),
          apiBaseUrl: setting(httpUrl.optional(), {
            env: "ALMANAC_DINGTALK_API_BASE_URL",
            description: "Robot OpenAPI base URL (default https://api.dingtalk.com).",
            example: "https://api.dingtalk.com",
          }),
          ...accessSettings("ALMANAC_DINGTALK", "DingTalk"),
        })
        .prefault({}),
      dedupHours: setting(positiveInt.default(48), {
        env: "ALMANAC_CHANNEL_DEDUP_HOURS",
        description:
          "How long delivered platform event ids are remembered (across restarts) to drop redeliveries.",
      }),
    })
    .prefault({}),
  shutdown: z
    .strictObject({
      deadlineMs: setting(positiveInt.default(15_000), {
        env: "ALMANAC_SHUTDOWN_DEADLINE_MS",
        description: "On SIGTERM/SIGINT: how long running turns may finish before they are cancelled.",
      }),
    })
    .prefault({}),
});

/** The validated configuration. */
export type AlmanacConfig = z.infer<typeof configSchema>;
