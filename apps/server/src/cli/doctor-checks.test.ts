import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CHANNELS } from "../channels/channel-list.js";
import { loadConfig } from "../config/load-config.js";
import { checkChannels, checkDataDirectory } from "./doctor-checks.js";

const configWith = (env: Record<string, string>) =>
  loadConfig({ env, cwd: "/nonexistent-almanac-cwd", dotenv: false }).config;

describe("doctor channel checks", () => {
  it("reports no channel as fine, naming every platform that could be added", () => {
    const results = checkChannels(configWith({}));
    expect(results.map((entry) => [entry.name, entry.status])).toEqual([["channels", "ok"]]);
    for (const channel of CHANNELS) expect(results[0]?.hint).toContain(channel.label);
  });

  it("accepts a complete Feishu set-up and a Discord token", () => {
    const results = checkChannels(
      configWith({
        ALMANAC_DISCORD_TOKEN: "MTIz.abc-def.ghi_jkl",
        ALMANAC_FEISHU_APP_ID: "cli_a1b2c3d4e5f60718",
        ALMANAC_FEISHU_APP_SECRET: "secret-value",
      }),
    );
    expect(results.map((entry) => [entry.name, entry.status])).toEqual([
      ["discord", "ok"],
      ["feishu", "ok"],
    ]);
    expect(JSON.stringify(results)).not.toContain("secret-value");
  });

  it("fails Feishu webhook mode without an encrypt key or verification token", () => {
    const [feishu] = checkChannels(
      configWith({
        ALMANAC_FEISHU_APP_ID: "cli_a1b2c3d4e5f60718",
        ALMANAC_FEISHU_APP_SECRET: "s",
        ALMANAC_FEISHU_MODE: "webhook",
      }),
    );
    expect(feishu).toMatchObject({ status: "fail" });
    expect(feishu?.message).toContain("ALMANAC_FEISHU_ENCRYPT_KEY");
  });

  it("fails a DingTalk client id without its secret, naming the missing one", () => {
    const [dingtalk] = checkChannels(configWith({ ALMANAC_DINGTALK_CLIENT_ID: "ding123" }));
    expect(dingtalk).toMatchObject({ name: "dingtalk", status: "fail" });
    expect(dingtalk?.message).toContain("ALMANAC_DINGTALK_CLIENT_ID is set");
  });
});

describe("doctor data directory check", () => {
  it("accepts a missing directory whose parent is writable, and a writable existing one", async () => {
    const parent = await mkdtemp(join(tmpdir(), "almanac-doctor-"));
    try {
      expect(await checkDataDirectory(join(parent, "a", "b"))).toMatchObject({ status: "ok" });
      expect(await checkDataDirectory(parent)).toMatchObject({
        status: "ok",
        message: `${parent} is writable`,
      });
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});
