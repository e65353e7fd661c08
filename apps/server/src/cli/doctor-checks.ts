import { randomBytes } from "node:crypto";
import { access, constants, mkdtemp, rm, stat } from "node:fs/promises";
import { delimiter, dirname, join } from "node:path";
import { CHANNELS, configuredChannels } from "../channels/channel-list.js";
import type { AlmanacConfig } from "../config/config-schema.js";
import { type CheckResult, check } from "./doctor-types.js";

/** The data directory exists and is writable, or can be created by the server on start. */
export async function checkDataDirectory(home: string): Promise<CheckResult> {
  const hint = "make the directory writable for this user, or set ALMANAC_HOME to another one";
  try {
    const info = await stat(home);
    if (!info.isDirectory()) return check("data directory", "fail", `${home} is not a directory`, hint);
  } catch {
    // Missing: the server creates it on start if its nearest existing parent is writable.
    let parent = dirname(home);
    for (;;) {
      try {
        await access(parent, constants.W_OK);
        return check("data directory", "ok", `${home} does not exist yet; the server will create it`);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" || dirname(parent) === parent) {
          return check("data directory", "fail", `${home} cannot be created (${parent}: ${code})`, hint);
        }
        parent = dirname(parent);
      }
    }
  }
  try {
    const probe = await mkdtemp(join(home, `.doctor-${randomBytes(3).toString("hex")}-`));
    await rm(probe, { recursive: true, force: true });
    return check("data directory", "ok", `${home} is writable`);
  } catch (error) {
    return check(
      "data directory",
      "fail",
      `${home} is not writable (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      hint,
    );
  }
}

/**
 * Every chat channel whose settings are (partly) set, checked by its descriptor: credentials complete and
 * well-formed. Secrets are never printed.
 */
export function checkChannels(config: AlmanacConfig): CheckResult[] {
  const results = configuredChannels(config).flatMap(({ descriptor, settings }) => {
    const outcome = descriptor.check(settings);
    return outcome === undefined
      ? []
      : [check(descriptor.name, outcome.status, outcome.message, outcome.hint)];
  });
  if (results.length > 0) return results;
  const labels = CHANNELS.map((channel) => channel.label);
  const platforms = labels.length > 1 ? `${labels.slice(0, -1).join(", ")} or ${labels.at(-1)}` : labels[0];
  return [
    check(
      "channels",
      "ok",
      "no chat channel configured (the API and console still work)",
      `see README 'Connecting chat apps' to add ${platforms}`,
    ),
  ];
}

/** A command as a stdio MCP server gives it: found on PATH (or at its path), or undefined. */
function findCommand(command: string, path: string | undefined): Promise<string | undefined> {
  const candidates = command.includes("/")
    ? [command]
    : (path ?? "")
        .split(delimiter)
        .filter((dir) => dir !== "")
        .map((dir) => join(dir, command));
  return candidates.reduce<Promise<string | undefined>>(
    (found, candidate) =>
      found.then(
        (hit) =>
          hit ??
          access(candidate, constants.X_OK).then(
            () => candidate,
            () => undefined,
          ),
      ),
    Promise.resolve(undefined),
  );
}

/** One MCP server as the running server reports it (`GET /api/tools`). */
interface McpServerReport {
  readonly name: string;
  readonly transport: string;
  readonly state: string;
  readonly tools: number;
  readonly lastError?: string;
}

/**
 * The configured MCP servers: their states as the running server reports them; without a running server, whether
 * each stdio server's command can be found (the most common reason a server never starts).
 */
export async function checkMcpServers(
  config: AlmanacConfig,
  reports: readonly McpServerReport[] | undefined,
  path: string | undefined,
): Promise<CheckResult[]> {
  const hint = "see docs/tools.md, 'When a server is down'";
  return Promise.all(
    Object.entries(config.mcpServers).map(async ([name, settings]): Promise<CheckResult> => {
      const label = `mcp ${name}`;
      if (!settings.enabled) return check(label, "ok", "disabled (enabled: false)");
      const report = reports?.find((entry) => entry.name === name);
      if (report !== undefined) {
        if (report.state === "ready")
          return check(label, "ok", `ready over ${report.transport}, ${report.tools} tools`);
        if (report.state === "down")
          return check(label, "fail", `down: ${report.lastError ?? "no reason given"}`, hint);
        return check(
          label,
          "warn",
          `${report.state}${report.lastError ? ` (${report.lastError})` : ""}`,
          hint,
        );
      }
      if (settings.command === undefined)
        return check(label, "ok", `${settings.url ?? ""}: not checked (the server is not running)`);
      const found = await findCommand(settings.command, path);
      return found === undefined
        ? check(
            label,
            "fail",
            `command "${settings.command}" not found on PATH`,
            "install it, or give its full path in command",
          )
        : check(label, "ok", `will start ${found} (not connected: the server is not running)`);
    }),
  );
}
