import { httpUrl, setting } from "@almanac/core";
import { mcpSecrets, mcpServersSchema, redactMcpServers } from "@almanac/mcp";
import { z } from "zod";
import { CHANNELS } from "../channels/channel-list.js";

const port = z.number().int().min(0).max(65535);
const positiveInt = z.number().int().positive();

/** `channels.<name>`: each channel's block is its descriptor's settings schema (packages/channels-*). */
type ChannelBlocks = { [Channel in (typeof CHANNELS)[number] as Channel["name"]]: Channel["settings"] };

// Object.fromEntries types its keys as string; the mapped type above restores each name's own schema.
const channelBlocks = Object.fromEntries(
  CHANNELS.map((channel) => [channel.name, channel.settings]),
) as ChannelBlocks;

/** The names of the chat apps in the channel list. */
const channelNames = CHANNELS.map((channel) => channel.name) as [
  (typeof CHANNELS)[number]["name"],
  ...(typeof CHANNELS)[number]["name"][],
];

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
        description:
          "Largest accepted request body, files sent as data: URLs to the chat routes not counted (those may be up to ALMANAC_ATTACHMENT_MAX_MB each); larger requests get 413.",
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
      vision: setting(z.boolean().default(false), {
        env: "ALMANAC_MODEL_VISION",
        description:
          "The chat model can see images: pictures people send reach it as image parts (resized to ALMANAC_IMAGE_MAX_SIDE). false: it gets a note with the saved file's path instead, and never an image part.",
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
  tools: z
    .strictObject({
      mcpConfig: setting(z.string().min(1).optional(), {
        env: "ALMANAC_MCP_CONFIG",
        description:
          'A JSON file in the format other MCP clients use ({"mcpServers": {…}}); its servers join mcpServers. Relative to the working directory.',
        example: "./mcp.json",
      }),
      approvalTimeoutMs: setting(positiveInt.default(600_000), {
        env: "ALMANAC_APPROVAL_TIMEOUT_MS",
        description:
          "How long a tool call waits for the owner's approval before it counts as denied (the turn's own timeout is paused meanwhile).",
      }),
      webFetch: setting(z.boolean().default(true), {
        env: "ALMANAC_WEB_FETCH",
        description:
          "The web_fetch tool: reads a public web page as Markdown (GET only; private and loopback addresses refused).",
      }),
      webFetchSharedChats: setting(z.boolean().default(false), {
        env: "ALMANAC_WEB_FETCH_SHARED_CHATS",
        description: "Offer web_fetch in shared chats (groups, other people) too, not only to the owner.",
      }),
      webFetchAllow: setting(z.array(z.string().min(1)).default([]), {
        env: "ALMANAC_WEB_FETCH_ALLOW",
        description:
          "Private addresses or CIDR ranges web_fetch may reach anyway (a service on your LAN), comma-separated.",
        example: "192.168.1.20,10.0.5.0/24",
      }),
    })
    .prefault({}),
  attachments: z
    .strictObject({
      maxMb: setting(z.number().positive().max(2048).default(20), {
        env: "ALMANAC_ATTACHMENT_MAX_MB",
        description:
          "Largest file (image, document, voice note) taken from a chat, in MB; a larger one is refused with a reply saying so, and the rest of the message is answered.",
      }),
      timeoutMs: setting(positiveInt.default(60_000), {
        env: "ALMANAC_ATTACHMENT_TIMEOUT_MS",
        description:
          "Longest a download of one message's attachments (and a voice note's transcription) may take before it is given up and the person told.",
      }),
      imageMaxSide: setting(z.number().int().min(256).max(8192).default(1568), {
        env: "ALMANAC_IMAGE_MAX_SIDE",
        description:
          "Longest side, in pixels, of an image as a vision model gets it (the saved file keeps its size); bounds what one image costs.",
      }),
    })
    .prefault({}),
  transcription: z
    .strictObject({
      baseUrl: setting(httpUrl.optional(), {
        env: "ALMANAC_TRANSCRIPTION_BASE_URL",
        description:
          "OpenAI-compatible speech-to-text endpoint (POST /audio/transcriptions: OpenAI, Groq, a local whisper server) for voice notes. Unset: voice notes are saved, and the person is told voice is not configured.",
        example: "http://127.0.0.1:8000/v1",
      }),
      apiKey: setting(z.string().min(1).optional(), {
        env: "ALMANAC_TRANSCRIPTION_API_KEY",
        description: "API key for the transcription endpoint (local servers often need none).",
        secret: true,
        example: "sk-...",
      }),
      model: setting(z.string().min(1).default("whisper-1"), {
        env: "ALMANAC_TRANSCRIPTION_MODEL",
        description: "Transcription model name sent with every request.",
      }),
    })
    .prefault({}),
  tasks: z
    .strictObject({
      graceMs: setting(positiveInt.default(3_600_000), {
        env: "ALMANAC_TASKS_GRACE_MS",
        description:
          "A reminder missed while the server was down runs once, late, if it is at most this late; older ones are reported in their chat, not run.",
      }),
      maxConcurrent: setting(positiveInt.max(64).default(4), {
        env: "ALMANAC_TASKS_MAX_CONCURRENT",
        description:
          "Scheduled tasks run at once (each is a turn of the model; chat turns are not held up by them).",
      }),
      heartbeatMinutes: setting(z.number().int().min(0).default(0), {
        env: "ALMANAC_HEARTBEAT_MINUTES",
        description:
          "Every this many minutes the assistant reads HEARTBEAT.md from the workspace and speaks only if something needs attention. 0: off.",
      }),
      heartbeatSession: setting(z.string().min(1).optional(), {
        env: "ALMANAC_HEARTBEAT_SESSION",
        description:
          "The owner's conversation the heartbeat runs in and speaks to, as a session key (see GET /api/sessions), e.g. a DM.",
        example: "discord:default:dm:123456789012345678",
      }),
    })
    .prefault({}),
  mcpServers: setting(mcpServersSchema.default({}), {
    env: "ALMANAC_MCP_SERVERS",
    description:
      "MCP servers whose tools the assistant may use, as the mcpServers map other clients use: command/args/env for a server Almanac starts, url/headers for one it connects to; approval (always|never), sharedChats, tools. env and headers values are masked everywhere.",
    example: '{"time":{"command":"uvx","args":["mcp-server-time"]}}',
    secretsIn: (value) => mcpSecrets(value as Parameters<typeof mcpSecrets>[0]),
    redact: (value) =>
      typeof value === "object" && value !== null ? redactMcpServers(value as Record<string, never>) : "***",
  }),
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
      consolidateAt: setting(
        z
          .string()
          .regex(/^(off|([01]\d|2[0-3]):[0-5]\d)$/, {
            error: 'expected a local time HH:MM (e.g. 03:30) or "off"',
          })
          .default("03:30"),
        {
          env: "ALMANAC_CONSOLIDATE_AT",
          description:
            "Local time (memory time zone) of the nightly run that folds the daily logs into MEMORY.md; off: only on request (POST /api/memory/consolidate).",
        },
      ),
      consolidationModel: setting(z.string().min(1).optional(), {
        env: "ALMANAC_CONSOLIDATION_MODEL",
        description:
          "Model (on the same endpoint) that consolidates the daily logs into MEMORY.md. Unset: the chat model.",
        example: "gpt-4.1",
      }),
    })
    .prefault({}),
  channels: z
    .strictObject({
      ...channelBlocks,
      streamReplies: setting(z.array(z.enum(channelNames)).default([...channelNames]), {
        env: "ALMANAC_STREAM_REPLIES",
        description:
          "Chat apps whose replies are shown as they are written (one message edited as the text arrives), where the channel can; `none`: every reply is sent whole.",
        example: "discord,feishu,dingtalk",
      }),
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
