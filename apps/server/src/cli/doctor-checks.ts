import { randomBytes } from "node:crypto";
import { access, constants, mkdtemp, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
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
