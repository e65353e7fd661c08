import { z } from "zod";

/** What the docs and the loader need to know about one setting, attached to its schema. */
export interface SettingMeta {
  /** Environment variable that sets this key when the config file does not. */
  readonly env: string;
  readonly description: string;
  /** Secrets are masked in logs, errors and the admin API. */
  readonly secret?: boolean;
  /** Example value for README and `.env.example` when there is no default. */
  readonly example?: string;
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
        description: "Largest reply the model may write (also reserved out of the window).",
      }),
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
        description: "Extra HTTP headers for the model endpoint, as a JSON object.",
        example: '{"X-Org":"me"}',
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
