import type { Logger } from "@almanac/core";
import type { AlmanacConfig } from "../config/config-schema.js";
import type { AccessPolicy } from "./access-policy.js";
import type { ChannelEntry } from "./channel-hub.js";

/** Every chat platform Almanac knows. */
export const KNOWN_CHANNELS = ["discord", "feishu", "dingtalk"] as const;

function policyOf(settings: AccessPolicy): AccessPolicy {
  return {
    dmPolicy: settings.dmPolicy,
    allowFrom: settings.allowFrom,
    groupPolicy: settings.groupPolicy,
    groups: settings.groups,
    requireMention: settings.requireMention,
    noMentionGroups: settings.noMentionGroups,
  };
}

/**
 * The adapters enabled by the configuration (credentials present), with their access policies. A channel's
 * package and its platform SDK are loaded only when the channel is enabled (discord.js alone takes a few
 * hundred milliseconds to load).
 */
export async function buildChannels(
  config: AlmanacConfig,
  logger: Logger,
): Promise<{ channels: ChannelEntry[]; disabled: string[] }> {
  const channels: ChannelEntry[] = [];
  const { discord, dingtalk, feishu } = config.channels;
  if (discord.token) {
    const { createDiscordAdapter } = await import("@almanac/channels-discord");
    channels.push({
      adapter: createDiscordAdapter({
        token: discord.token,
        ...(discord.apiBaseUrl ? { apiBaseUrl: discord.apiBaseUrl } : {}),
        // The adapter binds its own `channel` and `account` (binding them here too would repeat the keys).
        logger,
      }),
      policy: policyOf(discord),
    });
  }
  if (feishu.appId && feishu.appSecret) {
    const { createFeishuAdapter } = await import("@almanac/channels-feishu");
    channels.push({
      adapter: createFeishuAdapter({
        appId: feishu.appId,
        appSecret: feishu.appSecret,
        mode: feishu.mode,
        domain: feishu.domain,
        ...(feishu.encryptKey ? { encryptKey: feishu.encryptKey } : {}),
        ...(feishu.verificationToken ? { verificationToken: feishu.verificationToken } : {}),
        logger: logger.child({ channel: "feishu" }),
      }),
      policy: policyOf(feishu),
    });
  }
  if (dingtalk.clientId && dingtalk.clientSecret) {
    const { createDingTalkAdapter } = await import("@almanac/channels-dingtalk");
    channels.push({
      adapter: createDingTalkAdapter({
        clientId: dingtalk.clientId,
        clientSecret: dingtalk.clientSecret,
        ...(dingtalk.robotCode ? { robotCode: dingtalk.robotCode } : {}),
        ...(dingtalk.gatewayUrl ? { gatewayUrl: dingtalk.gatewayUrl } : {}),
        ...(dingtalk.apiBaseUrl ? { apiBaseUrl: dingtalk.apiBaseUrl } : {}),
        logger: logger.child({ channel: "dingtalk" }),
      }),
      policy: policyOf(dingtalk),
    });
  }
  const enabled = new Set(channels.map((entry) => entry.adapter.name));
  return { channels, disabled: KNOWN_CHANNELS.filter((name) => !enabled.has(name)) };
}
