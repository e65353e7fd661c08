import { formatSessionKey } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { CHANNELS } from "./channels/channel-list.js";
import { configSchema } from "./config/config-schema.js";
import { loadConfig } from "./config/load-config.js";
import { resolveMemoryScope } from "./memory-scope.js";

const config = loadConfig({
  env: {
    ALMANAC_DISCORD_ALLOW_FROM: "owner-1",
    ALMANAC_DISCORD_DM_POLICY: "open",
    ALMANAC_DISCORD_GROUPS: "room-1,room-2",
    ALMANAC_DISCORD_TRUSTED_GROUPS: "room-2",
    ALMANAC_FEISHU_ALLOW_FROM: "ou_owner",
  },
  cwd: "/nonexistent",
  dotenv: false,
}).config;

const key = (channel: string, kind: string, id: string, thread?: string) =>
  formatSessionKey({ channel, account: "default", kind, id, ...(thread === undefined ? {} : { thread }) });

describe("resolveMemoryScope", () => {
  it("gives the owner the console, the admin-token API and DMs from allowlisted senders", () => {
    expect(resolveMemoryScope(key("web", "web", "main"), config)).toEqual({ kind: "owner" });
    expect(resolveMemoryScope(key("api", "api", "张三"), config)).toEqual({ kind: "owner" });
    expect(resolveMemoryScope(key("discord", "dm", "owner-1"), config)).toEqual({ kind: "owner" });
    expect(resolveMemoryScope(key("feishu", "dm", "ou_owner"), config)).toEqual({ kind: "owner" });
  });

  it("keeps a stranger's DM (DM_POLICY=open) and an untrusted group out of private memory", () => {
    expect(resolveMemoryScope(key("discord", "dm", "stranger"), config)).toMatchObject({
      kind: "shared",
      folder: "discord-default-dm-stranger",
    });
    expect(resolveMemoryScope(key("discord", "group", "room-1"), config)).toEqual({
      kind: "shared",
      id: "discord:default:group:room-1",
      folder: "discord-default-group-room%2D1",
    });
    // An owner id in another channel's allowlist does not count here.
    expect(resolveMemoryScope(key("dingtalk", "dm", "owner-1"), config).kind).toBe("shared");
  });

  it("puts a group's threads in the group's scope, and treats a trusted group like the owner", () => {
    expect(resolveMemoryScope(key("discord", "group", "room-1", "thread-9"), config)).toEqual(
      resolveMemoryScope(key("discord", "group", "room-1"), config),
    );
    expect(resolveMemoryScope(key("discord", "group", "room-2"), config)).toEqual({ kind: "owner" });
    expect(resolveMemoryScope(key("discord", "group", "room-2", "thread-9"), config)).toEqual({
      kind: "owner",
    });
  });

  it("denies by default: unknown channels, kinds and malformed keys are shared", () => {
    expect(resolveMemoryScope(key("slack", "dm", "owner-1"), config).kind).toBe("shared");
    expect(resolveMemoryScope(key("discord", "thread", "owner-1"), config).kind).toBe("shared");
    expect(resolveMemoryScope(key("web", "api", "x"), config).kind).toBe("shared");
    expect(resolveMemoryScope("not a key", config).kind).toBe("shared");
    expect(resolveMemoryScope("__proto__:default:dm:owner-1", config).kind).toBe("shared");
  });

  it("reads every listed channel's allowlist and trusted groups, and no other channel's", () => {
    const owned = configSchema.parse({
      channels: Object.fromEntries(
        CHANNELS.map((channel) => [
          channel.name,
          { allowFrom: [`owner-${channel.name}`], trustedGroups: ["room"] },
        ]),
      ),
    });
    for (const { name } of CHANNELS) {
      expect(resolveMemoryScope(key(name, "dm", `owner-${name}`), owned)).toEqual({ kind: "owner" });
      expect(resolveMemoryScope(key(name, "group", "room"), owned)).toEqual({ kind: "owner" });
      const other = CHANNELS.find((channel) => channel.name !== name)?.name ?? "";
      expect(resolveMemoryScope(key(name, "dm", `owner-${other}`), owned).kind).toBe("shared");
    }
  });
});
