import { CHANNELS } from "../channels/channel-list.js";
import { listSettings, type SettingInfo } from "./settings.js";

function defaultText(setting: SettingInfo): string {
  if (setting.defaultValue === undefined) return "—";
  if (typeof setting.defaultValue === "string") return `\`${setting.defaultValue}\``;
  return `\`${JSON.stringify(setting.defaultValue)}\``;
}

function escapeCell(text: string): string {
  return text.replaceAll("|", "\\|");
}

/** The README configuration table, generated from the schema so the two cannot drift apart. */
export function renderConfigTable(): string {
  const rows = listSettings().map((setting) => {
    const description = setting.choices
      ? `${setting.description} One of: ${setting.choices.join(", ")}.`
      : setting.description;
    return `| \`${setting.env}\` | \`${setting.path}\` | ${defaultText(setting)} | ${escapeCell(description)}${setting.secret ? " (secret)" : ""} |`;
  });
  return [
    "| environment variable | config file key | default | meaning |",
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}

/** A section of `.env.example`: a title, a line or two saying when it matters, and the settings under it. */
interface EnvSection {
  readonly title: string;
  readonly intro: readonly string[];
  /** Settings whose config key starts with one of these (first section that matches wins). */
  readonly prefixes: readonly string[];
}

/** How a list is written in the environment, said once in `.env.example`. */
const LIST_NOTE = "Lists are comma-separated (or a JSON array).";

/** The sections in the order a new user needs them: the model first. */
const ENV_SECTIONS: readonly EnvSection[] = [
  {
    title: "Model: start here",
    intro: [
      "Almanac needs an OpenAI-compatible chat endpoint: set ALMANAC_MODEL_BASE_URL, ALMANAC_MODEL_NAME and (for",
      "hosted providers) ALMANAC_MODEL_API_KEY, and the model's real window in ALMANAC_MODEL_CONTEXT_WINDOW.",
      "Examples for OpenAI, DashScope, Ollama, vLLM and LM Studio: README, 'Pointing Almanac at a model'.",
    ],
    prefixes: ["model."],
  },
  {
    title: "Proxy",
    intro: [
      "The standard variables, read by Almanac itself for model and embedding requests (README, proxy).",
    ],
    prefixes: ["network."],
  },
  { title: "Server", intro: [], prefixes: ["home", "server.", "log.", "shutdown."] },
  // One section per channel, from the channel list; lists are explained once, in the first.
  ...CHANNELS.map((channel, index) => ({
    title: `Chat apps: ${channel.label}`,
    intro: [index === 0 ? `${channel.enabledBy} ${LIST_NOTE}` : channel.enabledBy],
    prefixes: [`channels.${channel.name}.`],
  })),
  { title: "Chat apps: all", intro: [], prefixes: ["channels."] },
  {
    title: "Memory",
    intro: ["Without an embedding endpoint, memory search is full-text only (it says so)."],
    prefixes: ["memory.", "embedding.", "index."],
  },
  {
    title: "Tools",
    intro: [
      "Tools from MCP servers (each call waits for your approval unless a server says approval: never) and",
      "web_fetch. The mcpServers map is easiest in a file: ALMANAC_MCP_CONFIG=./mcp.json. See docs/tools.md.",
    ],
    prefixes: ["tools.", "mcpServers"],
  },
  {
    title: "Attachments and voice notes",
    intro: [
      "Files people send are saved in the conversation's inbox folder of the workspace; images reach the model when",
      "ALMANAC_MODEL_VISION=true, voice notes are transcribed when a transcription endpoint is set. See docs/attachments.md.",
    ],
    prefixes: ["attachments.", "transcription."],
  },
  {
    title: "Reminders, tasks and the heartbeat",
    intro: ["See docs/tasks.md."],
    prefixes: ["tasks."],
  },
  {
    title: "Conversations and compaction",
    intro: [],
    prefixes: ["compaction.", "agent.", "sessions."],
  },
];

/** Variables Almanac does not read itself but a deployment of it does, each with its section. */
const OTHER_VARIABLES: readonly {
  readonly title: string;
  readonly intro: readonly string[];
  readonly variables: readonly {
    readonly name: string;
    readonly value: string;
    readonly description: string;
  }[];
}[] = [
  {
    title: "Docker Compose (read by docker compose, not by Almanac)",
    intro: ["See docs/docker.md."],
    variables: [
      {
        name: "COMPOSE_PROFILES",
        value: "qdrant,ollama",
        description:
          "Optional services to start with `docker compose up`: qdrant (memory index), ollama (local models).",
      },

      {
        name: "OLLAMA_CONTEXT_LENGTH",
        value: "32768",
        description:
          "Context window the ollama service gives every model; set ALMANAC_MODEL_CONTEXT_WINDOW to the same number.",
      },
    ],
  },
];

function envValue(setting: SettingInfo): string {
  if (setting.kind === "list") return setting.example ?? "";
  if (setting.defaultValue === undefined) return setting.example ?? "";
  return typeof setting.defaultValue === "string"
    ? setting.defaultValue
    : JSON.stringify(setting.defaultValue);
}

/**
 * The `.env.example` file, generated from the schema: every key, commented out, with its default or an example,
 * in sections with the model first; then the variables of the deployment around Almanac (Docker Compose).
 */
export function renderEnvExample(): string {
  const lines = [
    "# Almanac configuration. Copy to .env and uncomment what you need; every key is optional.",
    "# Precedence: almanac.yaml (or ALMANAC_CONFIG) value first, then the environment (including this file), then the default.",
    "# An ALMANAC_ variable that is not listed here is ignored, with a warning at start naming the closest one.",
    "# Generated from apps/server/src/config/config-schema.ts by `pnpm docs:config`.",
  ];
  const settings = listSettings();
  const placed = new Set<string>();
  for (const section of ENV_SECTIONS) {
    const members = settings.filter(
      (setting) =>
        !placed.has(setting.path) &&
        section.prefixes.some((prefix) => setting.path === prefix || setting.path.startsWith(prefix)),
    );
    if (members.length === 0) continue;
    lines.push("", `# ==== ${section.title} ====`, ...section.intro.map((line) => `# ${line}`), "");
    for (const setting of members) {
      placed.add(setting.path);
      lines.push(`# ${setting.description}${setting.secret ? " (secret)" : ""}`);
      lines.push(`# ${setting.env}=${envValue(setting)}`, "");
    }
  }
  const unplaced = settings.filter((setting) => !placed.has(setting.path));
  if (unplaced.length > 0)
    throw new Error(`.env.example has no section for ${unplaced.map((s) => s.path).join(", ")}`);
  for (const section of OTHER_VARIABLES) {
    lines.push("", `# ==== ${section.title} ====`, ...section.intro.map((line) => `# ${line}`), "");
    for (const variable of section.variables) {
      lines.push(`# ${variable.description}`, `# ${variable.name}=${variable.value}`, "");
    }
  }
  return `${lines.join("\n").trimEnd()}\n`;
}

/** Markers around the generated table in README.md. */
export const CONFIG_TABLE_MARKERS = {
  start: "<!-- config-table:start (generated by `pnpm docs:config`) -->",
  end: "<!-- config-table:end -->",
} as const;
