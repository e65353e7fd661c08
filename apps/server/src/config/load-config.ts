import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { isAbsolute, resolve } from "node:path";
import { parseSessionKey, UserError } from "@almanac/core";
import type { ProxySettings } from "@almanac/llm";
import { parse as parseDotenv } from "dotenv";
import type * as Yaml from "yaml";
import type { z } from "zod";
import { resolveMemoryScope } from "../memory-scope.js";
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
  /** Problems that do not stop the start (e.g. an `ALMANAC_*` variable no setting reads), one line each. */
  readonly warnings: readonly string[];
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
      return listFromEnv(trimmed);
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

/**
 * A list from the environment: comma-separated (`a, b`), or a JSON array whose items are strings or numbers
 * (ids are often written `[123, 456]`; numbers become their text), or `none` for an empty list (an empty variable
 * means "not set", so the default applies). Anything else is passed on as the text.
 */
function listFromEnv(trimmed: string): unknown {
  if (trimmed.toLowerCase() === "none") return [];
  if (!trimmed.startsWith("[")) {
    return trimmed
      .split(",")
      .map((part) => part.trim())
      .filter((part) => part !== "");
  }
  try {
    const parsed: unknown = JSON.parse(trimmed);
    if (Array.isArray(parsed) && parsed.every((item) => typeof item === "string" || typeof item === "number"))
      return parsed.map(String);
  } catch {
    // not JSON: reported as what it is
  }
  return trimmed;
}

function display(setting: SettingInfo | undefined, value: unknown): string {
  if (value === undefined) return "(unset)";
  if (setting?.redact) return JSON.stringify(setting.redact(value));
  if (setting?.secret || setting?.secretValues) return '"***"';
  if (typeof value === "string") return JSON.stringify(redactUrl(value));
  return JSON.stringify(value) ?? String(value);
}

/** What a setting of this kind accepts, in words a person reads in an error. */
function expectedKind(setting: SettingInfo): string {
  switch (setting.kind) {
    case "number":
      return "a number";
    case "boolean":
      return "true or false";
    case "list":
      return 'a list: comma-separated values (a,b) or a JSON array (["a","b"])';
    case "json":
      return `a JSON object${setting.example ? `, for example ${setting.example}` : ""}`;
    case "enum":
      return `one of: ${(setting.choices ?? []).join(", ")}`;
    default:
      return "text";
  }
}

/** One validation problem in plain words: what is expected, not the validator's vocabulary. */
function plainProblem(setting: SettingInfo | undefined, issue: z.core.$ZodIssue, value: unknown): string {
  if (setting === undefined) return issue.message;
  switch (issue.code) {
    case "invalid_type": {
      const item = issue.path.length > setting.path.split(".").length;
      if (item) return `every item must be text; ${JSON.stringify(value)} is not`;
      return `expected ${expectedKind(setting)}`;
    }
    case "invalid_value":
      return `expected ${expectedKind(setting)}`;
    case "too_small":
      if (issue.origin === "number")
        return `expected a number ${issue.inclusive ? "of at least" : "above"} ${String(issue.minimum)}`;
      if (issue.origin === "string") return "must not be empty";
      return issue.message;
    case "too_big":
      if (issue.origin === "number")
        return `expected a number ${issue.inclusive ? "of at most" : "below"} ${String(issue.maximum)}`;
      return issue.message;
    case "invalid_format":
      // Our own formats carry their own words ("expected an http(s) URL", token shapes); zod's are not as clear.
      return issue.message.startsWith("expected")
        ? issue.message
        : `expected ${expectedKind(setting)} (${issue.message})`;
    default:
      return issue.message;
  }
}

/** Edit distance of two short strings (for "did you mean"). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current.push(
        Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The proxy settings model requests go out with: the configured proxies, with loopback always direct (a model on
 * the same machine is never behind the proxy a network's other traffic needs).
 */
export function proxySettingsOf(config: AlmanacConfig): ProxySettings {
  const { httpProxy, httpsProxy, noProxy } = config.network;
  return {
    ...(httpProxy === undefined ? {} : { httpProxy }),
    ...(httpsProxy === undefined ? {} : { httpsProxy }),
    noProxy: ["localhost", "127.0.0.1", "::1", ...(noProxy === undefined ? [] : [noProxy])].join(","),
  };
}

/** Variables that are not settings of the schema but that Almanac reads. */
const OTHER_VARIABLES = new Set(["ALMANAC_CONFIG"]);

/**
 * One warning per `ALMANAC_*` variable no setting reads (a typo is otherwise silently ignored), with the
 * closest known name when one is near.
 */
function unknownVariables(
  env: Readonly<Record<string, string | undefined>>,
  settings: readonly SettingInfo[],
): string[] {
  const known = new Set([...settings.map((setting) => setting.env), ...OTHER_VARIABLES]);
  const warnings: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith("ALMANAC_") || known.has(name)) continue;
    let best: { name: string; distance: number } | undefined;
    for (const candidate of known) {
      const distance = editDistance(name, candidate);
      if (best === undefined || distance < best.distance) best = { name: candidate, distance };
    }
    const near = best !== undefined && best.distance <= Math.max(2, Math.floor(name.length / 6));
    warnings.push(
      `${name} is not a setting Almanac knows, so it is ignored${near ? `; did you mean ${best?.name}?` : ""} (the settings are listed in .env.example and the README)`,
    );
  }
  return warnings;
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
    const variable = [setting.env, ...(setting.envAliases ?? [])].find((name) => (env[name] ?? "") !== "");
    const text = variable === undefined ? undefined : env[variable];
    if (text !== undefined && text !== "") {
      setPath(input, setting.path, fromEnv(setting, text));
      sources.set(setting.path, "env");
    }
  }
  const mcpFile = mergeMcpConfigFile(input, options.cwd);
  /** Where a setting's value came from, in words: the variable (and which file held it) or the config key. */
  const origin = (setting: SettingInfo): string => {
    if (setting.path === "mcpServers" && mcpFile !== undefined)
      return `mcpServers (with the servers of ${mcpFile}, tools.mcpConfig; env ${setting.env})`;
    const source = sources.get(setting.path);
    if (source === "env") {
      const where = options.env[setting.env] === undefined ? `in ${dotenvPath}` : "environment variable";
      return `${setting.env} (${where}; config key ${setting.path})`;
    }
    if (source === "file") return `${setting.path} (in ${file}; env ${setting.env})`;
    return `${setting.path} (default; env ${setting.env})`;
  };
  const result = configSchema.safeParse(input);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      if (issue.code === "unrecognized_keys") {
        const prefix = issue.path.join(".");
        const keys = issue.keys.map((key) => (prefix === "" ? key : `${prefix}.${key}`));
        return `${keys.join(", ")} (in ${file ?? "config"}): unknown key; known keys: ${settings
          .filter((setting) => setting.path.startsWith(prefix))
          .map((setting) => setting.path)
          .join(", ")}`;
      }
      // The setting the problem belongs to (a list item's path goes one level deeper than its setting's).
      const path = issue.path.join(".");
      const setting = settings
        .filter((candidate) => path === candidate.path || path.startsWith(`${candidate.path}.`))
        .sort((a, b) => b.path.length - a.path.length)[0];
      if (setting === undefined) return `${path}: ${issue.message}`;
      const [head = "", tail = ""] = origin(setting).split(/ (?=\()/);
      return `${head} = ${display(setting, getPath(input, setting.path))} ${tail}: ${plainProblem(setting, issue, getPath(input, path))}`;
    });
    throw new ConfigError(problems, { cause: result.error });
  }
  const config = withOutputCap(result.data, sources.get("model.maxOutputTokens"), file);
  checkHeartbeat(config);
  return {
    config: { ...config, home: isAbsolute(config.home) ? config.home : resolve(options.cwd, config.home) },
    file,
    sources,
    warnings: unknownVariables(env, settings),
  };
}

/**
 * Adds the servers of the MCP configuration file (`tools.mcpConfig`, ALMANAC_MCP_CONFIG) to `mcpServers`: the
 * `{"mcpServers": {…}}` file other clients use (VS Code's `{"servers": {…}}` too), so one file serves them all.
 * Returns the file's path when there is one. A missing or unreadable file, or a server named in both places, is
 * a configuration error naming the file.
 */
function mergeMcpConfigFile(input: Record<string, unknown>, cwd: string): string | undefined {
  const given = getPath(input, "tools.mcpConfig");
  if (typeof given !== "string" || given === "") return undefined;
  const path = isAbsolute(given) ? given : resolve(cwd, given);
  const where = `tools.mcpConfig = "${given}" (ALMANAC_MCP_CONFIG)`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (error as Error).message;
    throw new ConfigError([`${where}: cannot read ${path} as JSON (${reason})`], { cause: error });
  }
  const servers =
    typeof parsed === "object" && parsed !== null
      ? ((parsed as Record<string, unknown>).mcpServers ?? (parsed as Record<string, unknown>).servers)
      : undefined;
  if (typeof servers !== "object" || servers === null || Array.isArray(servers))
    throw new ConfigError([`${where}: ${path} has no "mcpServers" object ({"mcpServers": {"name": {…}}})`]);
  const own = getPath(input, "mcpServers");
  // A value that is not a map (unreadable JSON in the variable) is left for validation to name.
  if (own !== undefined && (typeof own !== "object" || own === null || Array.isArray(own))) return path;
  const merged: Record<string, unknown> = typeof own === "object" && own !== null ? { ...own } : {};
  for (const [name, server] of Object.entries(servers)) {
    if (name in merged)
      throw new ConfigError([
        `mcpServers.${name}: defined both in the configuration and in ${path}; keep one`,
      ]);
    merged[name] = server;
  }
  setPath(input, "mcpServers", merged);
  return path;
}

/**
 * The heartbeat speaks in one of the owner's conversations: a session key that is the owner's (a DM from
 * ALLOW_FROM, the console, the API), never a group's, which would hear about the owner's private checklist.
 */
function checkHeartbeat(config: AlmanacConfig): void {
  const { heartbeatMinutes, heartbeatSession } = config.tasks;
  if (heartbeatMinutes === 0) return;
  const where = `tasks.heartbeatSession (ALMANAC_HEARTBEAT_SESSION)`;
  if (heartbeatSession === undefined)
    throw new ConfigError([
      `${where}: unset, but ALMANAC_HEARTBEAT_MINUTES = ${heartbeatMinutes} turns the heartbeat on; set it to the session key of your own conversation, e.g. discord:default:dm:<your id> or web:default:web:main`,
    ]);
  try {
    parseSessionKey(heartbeatSession);
  } catch {
    throw new ConfigError([
      `${where} = "${heartbeatSession}": not a session key; keys look like discord:default:dm:<id> (see GET /api/sessions)`,
    ]);
  }
  if (resolveMemoryScope(heartbeatSession, config).kind !== "owner")
    throw new ConfigError([
      `${where} = "${heartbeatSession}": not one of the owner's conversations (a DM from ALLOW_FROM, the console or the API), so it may not hear the owner's heartbeat`,
    ]);
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

/** The password (or a lone user name, often a token) inside a URL, if any. */
function urlCredentials(value: string): string[] {
  if (!/^https?:\/\//i.test(value)) return [];
  try {
    const url = new URL(value);
    return [url.password, url.password === "" ? url.username : ""]
      .filter((part) => part !== "")
      .flatMap((part) => [part, decodeURIComponent(part)]);
  } catch {
    return [];
  }
}

/** A URL with its credentials replaced by `***` (`https://user:***@host/…`); other text unchanged. */
export function redactUrl(value: string): string {
  if (urlCredentials(value).length === 0) return value;
  const url = new URL(value);
  if (url.password !== "") url.password = "***";
  else url.username = "***";
  return url.toString();
}

/**
 * The values of every credential that is set (API keys, tokens, app secrets, header values, passwords in
 * URLs): never to appear in a log.
 */
export function secretValues(config: AlmanacConfig): string[] {
  return listSettings().flatMap((setting) => {
    const value = getPath(config as unknown as Record<string, unknown>, setting.path);
    if (setting.secret) return typeof value === "string" && value !== "" ? [value] : [];
    if (setting.secretsIn) return value === undefined ? [] : [...setting.secretsIn(value)];
    if (setting.secretValues && typeof value === "object" && value !== null)
      return Object.values(value).filter(
        (entry): entry is string => typeof entry === "string" && entry !== "",
      );
    return typeof value === "string" ? urlCredentials(value) : [];
  });
}

/** The configuration with every credential replaced by `***` (for logs and the admin API): see {@link secretValues}. */
export function redactConfig(config: AlmanacConfig): Record<string, unknown> {
  const copy = structuredClone(config) as Record<string, unknown>;
  for (const setting of listSettings()) {
    const value = getPath(copy, setting.path);
    if (value === undefined) continue;
    if (setting.secret) setPath(copy, setting.path, "***");
    else if (setting.redact) setPath(copy, setting.path, setting.redact(value));
    else if (setting.secretValues && typeof value === "object" && value !== null)
      setPath(copy, setting.path, Object.fromEntries(Object.keys(value).map((key) => [key, "***"])));
    else if (typeof value === "string") setPath(copy, setting.path, redactUrl(value));
  }
  return copy;
}
