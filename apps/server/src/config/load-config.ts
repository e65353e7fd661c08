import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { isAbsolute, resolve } from "node:path";
import { UserError } from "@almanac/core";
import { parse as parseDotenv } from "dotenv";
import type * as Yaml from "yaml";
import type { z } from "zod";
import { type AlmanacConfig, configSchema } from "./config-schema.js";
import { listSettings, type SettingInfo } from "./settings.js";

/** Where a configuration value came from. */
export type ConfigSource = "file" | "env" | "default";

/** The validated configuration plus where it came from. */
export interface LoadedConfig {
  readonly config: AlmanacConfig;
  /** The config file that was read, if any. */
  readonly file: string | undefined;
  /** Source of every key that was set explicitly (absent keys came from defaults). */
  readonly sources: ReadonlyMap<string, ConfigSource>;
}

/** Options of {@link loadConfig}. Only `apps/server` passes `process.env` in. */
export interface LoadConfigOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Read `<cwd>/.env` (default true). Real environment variables win over `.env`. */
  readonly dotenv?: boolean;
}

/** A configuration that cannot be used; the message lists every problem with key, source and allowed values. */
export class ConfigError extends UserError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[], options: { cause?: unknown } = {}) {
    super(
      "config.invalid",
      `Invalid configuration:\n${problems.map((line) => `  - ${line}`).join("\n")}`,
      options,
    );
    this.problems = problems;
  }
}

const CONFIG_FILE_NAMES = ["almanac.yaml", "almanac.yml", "almanac.json"];

function findConfigFile(options: LoadConfigOptions, env: Readonly<Record<string, string | undefined>>) {
  const explicit = env.ALMANAC_CONFIG;
  if (explicit) {
    const path = isAbsolute(explicit) ? explicit : resolve(options.cwd, explicit);
    if (!existsSync(path)) throw new ConfigError([`ALMANAC_CONFIG = "${explicit}": no such file (${path})`]);
    return path;
  }
  return CONFIG_FILE_NAMES.map((name) => resolve(options.cwd, name)).find((path) => existsSync(path));
}

/**
 * The YAML parser, loaded only when there is a configuration file (~20 ms of CPU at every start and every CLI
 * command otherwise). Synchronous, like the rest of the loading: yaml ships a CommonJS build.
 */
const parseYaml = (text: string): unknown =>
  (createRequire(import.meta.url)("yaml") as typeof Yaml).parse(text);

function readConfigFile(path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ConfigError([`${path}: not valid YAML/JSON (${(error as Error).message})`], { cause: error });
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ConfigError([`${path}: the top level must be a mapping of keys to values`]);
  }
  return parsed as Record<string, unknown>;
}

function getPath(object: Record<string, unknown>, path: string): unknown {
  let current: unknown = object;
  for (const part of path.split(".")) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function setPath(object: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split(".");
  let current = object;
  for (const part of parts.slice(0, -1)) {
    const next = current[part];
    if (typeof next !== "object" || next === null || Array.isArray(next)) current[part] = {};
    current = current[part] as Record<string, unknown>;
  }
  current[parts[parts.length - 1] as string] = value;
}

/** Reads an environment string as the setting's kind; unreadable text is passed on so validation names it. */
function fromEnv(setting: SettingInfo, text: string): unknown {
  const trimmed = text.trim();
  switch (setting.kind) {
    case "number":
      return trimmed !== "" && Number.isFinite(Number(trimmed)) ? Number(trimmed) : text;
    case "boolean":
      if (/^(true|1|yes|on)$/i.test(trimmed)) return true;
      if (/^(false|0|no|off)$/i.test(trimmed)) return false;
      return text;
    case "list":
      // Comma-separated in the environment; a JSON array is accepted too.
      if (trimmed.startsWith("[")) {
        try {
          return JSON.parse(trimmed);
        } catch {
          return text;
        }
      }
      return trimmed === ""
        ? []
        : trimmed
            .split(",")
            .map((part) => part.trim())
            .filter((part) => part !== "");
    case "json":
      try {
        return JSON.parse(trimmed);
      } catch {
        return text;
      }
    default:
      return text;
  }
}

function display(setting: SettingInfo | undefined, value: unknown): string {
  if (value === undefined) return "(unset)";
  if (setting?.secret) return '"***"';
  return JSON.stringify(value) ?? String(value);
}

function allowed(setting: SettingInfo | undefined, issue: z.core.$ZodIssue): string {
  if (setting?.choices) return `${issue.message}; allowed: ${setting.choices.join(", ")}`;
  return issue.message;
}

/**
 * Loads the configuration: config file value first, then the environment variable, then the default.
 * Throws {@link ConfigError} naming the key, its source, the value and what is allowed.
 */
export function loadConfig(options: LoadConfigOptions): LoadedConfig {
  const dotenvPath = resolve(options.cwd, ".env");
  const dotenvValues =
    options.dotenv !== false && existsSync(dotenvPath) ? parseDotenv(readFileSync(dotenvPath, "utf8")) : {};
  const env = { ...dotenvValues, ...options.env };
  const file = findConfigFile(options, env);
  const input = file === undefined ? {} : readConfigFile(file);
  const sources = new Map<string, ConfigSource>();
  const settings = listSettings();
  for (const setting of settings) {
    if (getPath(input, setting.path) !== undefined) {
      sources.set(setting.path, "file");
      continue;
    }
    const text = env[setting.env];
    if (text !== undefined && text !== "") {
      setPath(input, setting.path, fromEnv(setting, text));
      sources.set(setting.path, "env");
    }
  }
  const result = configSchema.safeParse(input);
  if (!result.success) {
    const byPath = new Map(settings.map((setting) => [setting.path, setting]));
    const problems = result.error.issues.map((issue) => {
      if (issue.code === "unrecognized_keys") {
        const prefix = issue.path.join(".");
        const keys = issue.keys.map((key) => (prefix === "" ? key : `${prefix}.${key}`));
        return `${keys.join(", ")} (from ${file ?? "config"}): unknown key; known keys: ${settings
          .filter((setting) => setting.path.startsWith(prefix))
          .map((setting) => setting.path)
          .join(", ")}`;
      }
      const path = issue.path.join(".");
      const setting = byPath.get(path);
      const source = sources.get(path);
      const origin =
        source === "env" ? `from ${setting?.env}` : source === "file" ? `from ${file}` : "default";
      return `${path} = ${display(setting, getPath(input, path))} (${origin}${setting && source !== "env" ? `; env ${setting.env}` : ""}): ${allowed(setting, issue)}`;
    });
    throw new ConfigError(problems, { cause: result.error });
  }
  const config = withOutputCap(result.data, sources.get("model.maxOutputTokens"), file);
  return {
    config: { ...config, home: isAbsolute(config.home) ? config.home : resolve(options.cwd, config.home) },
    file,
    sources,
  };
}

/** The output cap when none is set: 4,096 tokens, or an eighth of a smaller window (1,024 at 8K). */
export function defaultOutputCap(contextWindow: number): number {
  return Math.min(4096, Math.max(256, Math.floor(contextWindow / 8)));
}

/**
 * Fits the output cap to the window: the default shrinks with a small window (a 4,096-token reserve would leave
 * an 8K model too little prompt to hold the system prompt and tools), and a cap set to half the window or more
 * is refused, naming the key — every request is sized as prompt + cap ≤ window.
 */
function withOutputCap(
  config: AlmanacConfig,
  source: ConfigSource | undefined,
  file: string | undefined,
): AlmanacConfig {
  const { contextWindow, maxOutputTokens } = config.model;
  if (source === undefined)
    return { ...config, model: { ...config.model, maxOutputTokens: defaultOutputCap(contextWindow) } };
  if (maxOutputTokens * 2 > contextWindow) {
    throw new ConfigError([
      `model.maxOutputTokens = ${maxOutputTokens} (${source === "env" ? "from ALMANAC_MODEL_MAX_OUTPUT_TOKENS" : `from ${file}; env ALMANAC_MODEL_MAX_OUTPUT_TOKENS`}): must be at most half of model.contextWindow (${contextWindow}, ALMANAC_MODEL_CONTEXT_WINDOW), so prompts keep room; for example ${defaultOutputCap(contextWindow)}`,
    ]);
  }
  return config;
}

/** True when enough is configured to call a model; otherwise the names of the missing env variables. */
export function missingModelSettings(config: AlmanacConfig): string[] {
  const missing: string[] = [];
  if (config.model.baseUrl === undefined) missing.push("ALMANAC_MODEL_BASE_URL");
  if (config.model.name === undefined) missing.push("ALMANAC_MODEL_NAME");
  return missing;
}

/** The values of every secret setting that is set (API keys, tokens, app secrets): never to appear in a log. */
export function secretValues(config: AlmanacConfig): string[] {
  return listSettings().flatMap((setting) => {
    const value = setting.secret
      ? getPath(config as unknown as Record<string, unknown>, setting.path)
      : undefined;
    return typeof value === "string" && value !== "" ? [value] : [];
  });
}

/** The configuration with every secret replaced by `***` (for logs and the admin API). */
export function redactConfig(config: AlmanacConfig): Record<string, unknown> {
  const copy = structuredClone(config) as Record<string, unknown>;
  for (const setting of listSettings()) {
    if (setting.secret && getPath(copy, setting.path) !== undefined) setPath(copy, setting.path, "***");
  }
  return copy;
}
