import type { AlmanacConfig } from "../config/config-schema.js";
import { ConfigError, type LoadedConfig, loadConfig, missingModelSettings } from "../config/load-config.js";
import { CliError, createAdminClient, resolveTarget, type ServerTarget } from "./admin-client.js";
import { type CliContext, EXIT, writeLine } from "./cli-context.js";
import { checkChannels, checkDataDirectory, checkMcpServers } from "./doctor-checks.js";
import { networkReason, PROBE_TIMEOUT_MS, probeChatModel, probeEmbeddings } from "./doctor-probes.js";
import { type CheckResult, check } from "./doctor-types.js";

function checkConfig(context: CliContext): { result: CheckResult; loaded?: LoadedConfig } {
  try {
    const loaded = loadConfig({ env: context.env, cwd: context.io.cwd });
    const from = loaded.file === undefined ? "environment and defaults" : loaded.file;
    if (loaded.warnings.length > 0) {
      return {
        result: check(
          "config",
          "warn",
          `valid (${from}), but: ${loaded.warnings.join("; ")}`,
          "rename or remove the variables named above",
        ),
        loaded,
      };
    }
    return { result: check("config", "ok", `valid (${from})`), loaded };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return {
      result: check(
        "config",
        "fail",
        `invalid: ${error.problems.join("; ")} (the checks that need the configuration were skipped)`,
        "fix the key named above in the environment, .env or almanac.yaml",
      ),
    };
  }
}

async function checkModel(config: AlmanacConfig, fetcher: typeof fetch): Promise<CheckResult> {
  const missing = missingModelSettings(config);
  if (missing.length > 0) {
    return check(
      "model",
      "fail",
      `not configured (${missing.join(" and ")} unset): chat requests get 503`,
      "set ALMANAC_MODEL_BASE_URL and ALMANAC_MODEL_NAME (see README 'Pointing Almanac at a model')",
    );
  }
  return probeChatModel({
    name: "model",
    baseUrl: config.model.baseUrl as string,
    model: config.model.name as string,
    apiKey: config.model.apiKey,
    apiKeyVariable: "ALMANAC_MODEL_API_KEY",
    modelVariable: "ALMANAC_MODEL_NAME",
    baseUrlVariable: "ALMANAC_MODEL_BASE_URL",
    headers: config.model.headers,
    fetch: fetcher,
  });
}

async function checkEmbeddings(config: AlmanacConfig, fetcher: typeof fetch): Promise<CheckResult> {
  // Read defensively: the embedding settings are new and may be absent from older configurations.
  const embedding = (config as { embedding?: Partial<Record<"baseUrl" | "model" | "apiKey", string>> })
    .embedding;
  if (embedding?.baseUrl === undefined && embedding?.model === undefined) {
    return check(
      "embeddings",
      "warn",
      "not configured: memory search is full-text search only",
      "set ALMANAC_EMBEDDING_BASE_URL and ALMANAC_EMBEDDING_MODEL for semantic search",
    );
  }
  if (embedding.baseUrl === undefined || embedding.model === undefined) {
    return check(
      "embeddings",
      "fail",
      `${embedding.baseUrl === undefined ? "ALMANAC_EMBEDDING_BASE_URL" : "ALMANAC_EMBEDDING_MODEL"} is unset`,
      "set both ALMANAC_EMBEDDING_BASE_URL and ALMANAC_EMBEDDING_MODEL, or neither",
    );
  }
  return probeEmbeddings({
    name: "embeddings",
    baseUrl: embedding.baseUrl,
    model: embedding.model,
    apiKey: embedding.apiKey,
    apiKeyVariable: "ALMANAC_EMBEDDING_API_KEY",
    modelVariable: "ALMANAC_EMBEDDING_MODEL",
    baseUrlVariable: "ALMANAC_EMBEDDING_BASE_URL",
    fetch: fetcher,
  });
}

async function checkServer(target: ServerTarget, context: CliContext): Promise<CheckResult> {
  const signal = AbortSignal.timeout(PROBE_TIMEOUT_MS);
  try {
    const response = await context.fetch(`${target.baseUrl}/healthz`, { signal });
    await response.body?.cancel();
    return response.ok
      ? check("server", "ok", `running at ${target.baseUrl}`)
      : check(
          "server",
          "warn",
          `${target.baseUrl}/healthz answered HTTP ${response.status}`,
          "is another program using this port?",
        );
  } catch (error) {
    return check(
      "server",
      "warn",
      `not running at ${target.baseUrl} (${networkReason(error, signal.aborted, PROBE_TIMEOUT_MS)})`,
      "start it with `almanac start`",
    );
  }
}

function describeIndex(body: unknown): string {
  const index = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const parts = [
    typeof index.state === "string" ? index.state : undefined,
    typeof index.files === "number" ? `${index.files} files` : undefined,
    typeof index.chunks === "number" ? `${index.chunks} chunks` : undefined,
    typeof index.embeddedChunks === "number" ? `${index.embeddedChunks} embedded` : undefined,
  ].filter((part) => part !== undefined);
  return parts.length > 0 ? parts.join(", ") : "answered";
}

/** The index check from a `GET /api/memory/index` body (the CLI fetches it; the server's setup route has it). */
export function indexCheck(body: unknown): CheckResult {
  const index = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof index.lastError === "string") {
    return check(
      "index",
      "fail",
      `the last sync failed (${index.lastError}); ${describeIndex(body)}`,
      "run `almanac memory reindex`",
    );
  }
  return check("index", "ok", describeIndex(body));
}

async function checkIndex(target: ServerTarget, running: boolean, context: CliContext): Promise<CheckResult> {
  if (!running) {
    return check(
      "index",
      "warn",
      "not checked: server not running",
      "start it, then run `almanac doctor` again",
    );
  }
  try {
    return indexCheck(await createAdminClient(target, context.fetch).json("GET", "/api/memory/index"));
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    return check("index", "warn", `not checked: ${error.message}`);
  }
}

/** The MCP servers' states from the running server, or undefined when it cannot tell. */
async function mcpReports(
  target: ServerTarget,
  context: CliContext,
): Promise<Parameters<typeof checkMcpServers>[1]> {
  try {
    const body = (await createAdminClient(target, context.fetch).json("GET", "/api/tools")) as {
      mcpServers?: Parameters<typeof checkMcpServers>[1];
    };
    return body.mcpServers;
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    return undefined;
  }
}

/**
 * The checks of a loaded configuration that need no running server: data directory, model and embeddings
 * (probed over the network), channel credentials. `almanac doctor` runs them, and so does the server's
 * `GET /api/setup` (the console's first-run page), so both report the same lines.
 */
export async function configurationChecks(
  config: AlmanacConfig,
  fetcher: typeof fetch,
): Promise<CheckResult[]> {
  const [dataDirectory, model, embeddings] = await Promise.all([
    checkDataDirectory(config.home),
    checkModel(config, fetcher),
    checkEmbeddings(config, fetcher),
  ]);
  return [dataDirectory, model, embeddings, ...checkChannels(config)];
}

/** Runs every check in order; checks that need a valid configuration are skipped when it is invalid. */
async function runDoctorChecks(context: CliContext): Promise<CheckResult[]> {
  const { result, loaded } = checkConfig(context);
  if (loaded === undefined) return [result];
  const { config } = loaded;
  const target = resolveTarget(context);
  const [checks, server] = await Promise.all([
    configurationChecks(config, context.fetch),
    checkServer(target, context),
  ]);
  const running = server.status === "ok";
  const [index, mcp] = await Promise.all([
    checkIndex(target, running, context),
    checkMcpServers(config, running ? await mcpReports(target, context) : undefined, context.env.PATH),
  ]);
  return [result, ...checks, server, index, ...mcp];
}

const LABEL = { ok: "ok  ", warn: "warn", fail: "fail" } as const;

/** `almanac doctor`: prints one line per check; exit 0 when nothing failed, 1 otherwise. */
export async function doctorCommand(context: CliContext): Promise<number> {
  const checks = await runDoctorChecks(context);
  const ok = checks.every((entry) => entry.status !== "fail");
  const { stdout } = context.io;
  if (context.options.json) {
    writeLine(stdout, JSON.stringify({ checks, ok }, null, 2));
  } else {
    const width = Math.max(...checks.map((entry) => entry.name.length));
    for (const entry of checks) {
      const hint = entry.hint === undefined ? "" : `  → ${entry.hint}`;
      writeLine(stdout, `${LABEL[entry.status]}  ${entry.name.padEnd(width)}  ${entry.message}${hint}`);
    }
    const count = (status: string) => checks.filter((entry) => entry.status === status).length;
    writeLine(stdout, `\n${count("ok")} ok, ${count("warn")} warn, ${count("fail")} fail`);
  }
  return ok ? EXIT.ok : EXIT.failure;
}
