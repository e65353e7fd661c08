import { randomBytes } from "node:crypto";
import { access, constants, mkdtemp, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
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

/** Credentials of every configured chat channel are complete and well-formed. Secrets are never printed. */
export function checkChannels(config: AlmanacConfig): CheckResult[] {
  const results: CheckResult[] = [];
  const { discord, feishu, dingtalk } = config.channels;
  // The credentials' shapes are checked when the configuration loads (a bad one stops the start).
  if (discord.token !== undefined) results.push(check("discord", "ok", "enabled (token set)"));
  if (feishu.appId !== undefined || feishu.appSecret !== undefined) {
    results.push(checkFeishu(feishu));
  }
  if (dingtalk.clientId !== undefined || dingtalk.clientSecret !== undefined) {
    results.push(
      dingtalk.clientId !== undefined && dingtalk.clientSecret !== undefined
        ? check("dingtalk", "ok", "enabled (client id and secret set, Stream mode)")
        : check(
            "dingtalk",
            "fail",
            `only ${dingtalk.clientId === undefined ? "ALMANAC_DINGTALK_CLIENT_SECRET" : "ALMANAC_DINGTALK_CLIENT_ID"} is set; the channel stays off`,
            "set both ALMANAC_DINGTALK_CLIENT_ID and ALMANAC_DINGTALK_CLIENT_SECRET, or neither",
          ),
    );
  }
  if (results.length === 0) {
    results.push(
      check(
        "channels",
        "ok",
        "no chat channel configured (the API and console still work)",
        "see README 'Connecting chat apps' to add Discord, Feishu or DingTalk",
      ),
    );
  }
  return results;
}

function checkFeishu(feishu: AlmanacConfig["channels"]["feishu"]): CheckResult {
  if (feishu.appId === undefined || feishu.appSecret === undefined) {
    return check(
      "feishu",
      "fail",
      `only ${feishu.appId === undefined ? "ALMANAC_FEISHU_APP_SECRET" : "ALMANAC_FEISHU_APP_ID"} is set; the channel stays off`,
      "set both ALMANAC_FEISHU_APP_ID and ALMANAC_FEISHU_APP_SECRET, or neither",
    );
  }

  if (
    feishu.mode === "webhook" &&
    feishu.encryptKey === undefined &&
    feishu.verificationToken === undefined
  ) {
    return check(
      "feishu",
      "fail",
      "webhook mode without ALMANAC_FEISHU_ENCRYPT_KEY or ALMANAC_FEISHU_VERIFICATION_TOKEN: events cannot be verified",
      "set ALMANAC_FEISHU_ENCRYPT_KEY (or the verification token) from Events & Callbacks → Encryption Strategy",
    );
  }
  return check("feishu", "ok", `enabled (app ${feishu.appId}, ${feishu.mode} mode)`);
}
