import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type ErrorCode, UserError } from "@almanac/core";
import type { AlmanacConfig } from "../config/config-schema.js";
import { ConfigError, loadConfig } from "../config/load-config.js";
import { type CliContext, EXIT } from "./cli-context.js";

/** A failure the CLI reports as one message and an exit code (see {@link EXIT}). */
export class CliError extends UserError {
  readonly exitCode: number;
  /** The HTTP status when the server answered with an error. */
  readonly status: number | undefined;
  constructor(
    code: ErrorCode,
    message: string,
    exitCode: number,
    options: { cause?: unknown; status?: number } = {},
  ) {
    super(code, message, options);
    this.exitCode = exitCode;
    this.status = options.status;
  }
}

/** Where the running server is and how to authenticate to it. */
export interface ServerTarget {
  readonly baseUrl: string;
  readonly token: string | undefined;
  /** `<home>/admin-token`, named when the token is refused. */
  readonly tokenFile: string;
}

/** The URL a client uses for a bind address: wildcard addresses are reached on loopback. */
function serverUrl(config: AlmanacConfig): string {
  const host = config.server.host;
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${config.server.port}`;
}

function readTokenFile(file: string): string | undefined {
  try {
    const token = readFileSync(file, "utf8").trim();
    return token === "" ? undefined : token;
  } catch {
    return undefined;
  }
}

/**
 * Finds the server URL (`--url`, else the configured host/port) and the admin token (ALMANAC_ADMIN_TOKEN or
 * the config file, else `<home>/admin-token`). An invalid configuration is fatal unless `--url` was given.
 */
export function resolveTarget(context: CliContext): ServerTarget {
  let config: AlmanacConfig | undefined;
  try {
    config = loadConfig({ env: context.env, cwd: context.io.cwd }).config;
  } catch (error) {
    if (!(error instanceof ConfigError) || context.options.url === undefined) {
      if (error instanceof ConfigError)
        throw new CliError(error.code, error.message, EXIT.config, { cause: error });
      throw error;
    }
  }
  const home = config?.home ?? resolve(context.io.cwd, context.env.ALMANAC_HOME ?? "./data");
  const tokenFile = join(home, "admin-token");
  const configured = config?.server.adminToken ?? context.env.ALMANAC_ADMIN_TOKEN;
  const baseUrl = (context.options.url ?? (config ? serverUrl(config) : "")).replace(/\/+$/, "");
  return { baseUrl, token: configured || readTokenFile(tokenFile), tokenFile };
}

/** The admin API of a running server, with the CLI's error handling (exit 3 unreachable, 4 refused). */
export interface AdminClient {
  readonly baseUrl: string;
  /** Sends a request and returns the parsed JSON body of a 2xx answer. */
  json(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<unknown>;
  /** Sends a request and returns the raw 2xx response (for streams). */
  raw(
    method: "GET" | "POST" | "DELETE",
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Response>;
}

function networkCode(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === "string" ? cause.code : undefined;
}

async function errorMessage(response: Response): Promise<{ code?: string; message: string }> {
  const text = await response.text().catch(() => "");
  try {
    const parsed: unknown = JSON.parse(text);
    const error = (parsed as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    if (typeof error?.message === "string") {
      return { ...(typeof error.code === "string" ? { code: error.code } : {}), message: error.message };
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return { message: text.slice(0, 300) || response.statusText };
}

/** Creates a client for the server at `target`. */
export function createAdminClient(target: ServerTarget, fetchImpl: typeof fetch = fetch): AdminClient {
  const notRunning = (error: unknown) => {
    const code = networkCode(error);
    return new CliError(
      "cli.server_unreachable",
      `Almanac is not running at ${target.baseUrl} (start it with \`almanac start\`)${
        code && code !== "ECONNREFUSED" ? ` [${code}]` : ""
      }`,
      EXIT.notRunning,
      { cause: error },
    );
  };
  const raw: AdminClient["raw"] = async (method, path, body, headers = {}) => {
    if (target.baseUrl === "") throw notRunning(undefined);
    let response: Response;
    try {
      response = await fetchImpl(`${target.baseUrl}${path}`, {
        method,
        headers: {
          ...(target.token === undefined ? {} : { authorization: `Bearer ${target.token}` }),
          ...(body === undefined ? {} : { "content-type": "application/json" }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw notRunning(error);
    }
    if (response.ok) return response;
    if (response.status === 401) {
      await response.body?.cancel();
      throw new CliError(
        "cli.token_refused",
        `the admin token was refused; set ALMANAC_ADMIN_TOKEN or check ${target.tokenFile}`,
        EXIT.unauthorized,
        { status: 401 },
      );
    }
    const detail = await errorMessage(response);
    if (response.status === 404 && detail.code === "route.not_found") {
      throw new CliError(
        "cli.route_missing",
        `the server at ${target.baseUrl} does not offer ${method} ${path.split("?")[0]} (is it an older version?)`,
        EXIT.failure,
        { status: 404 },
      );
    }
    throw new CliError(
      "cli.request_failed",
      `${method} ${path.split("?")[0]} failed with HTTP ${response.status}: ${detail.message}${detail.code === undefined ? "" : ` (${detail.code})`}`,
      EXIT.failure,
      { status: response.status },
    );
  };
  return {
    baseUrl: target.baseUrl,
    raw,
    async json(method, path, body) {
      const response = await raw(method, path, body);
      const text = await response.text();
      try {
        return text === "" ? {} : (JSON.parse(text) as unknown);
      } catch (error) {
        throw new CliError(
          "cli.malformed_response",
          `${path}: the server did not answer JSON`,
          EXIT.failure,
          {
            cause: error,
          },
        );
      }
    },
  };
}
