import { createDingTalkAdapter } from "@almanac/channels-dingtalk";
import { createDiscordAdapter } from "@almanac/channels-discord";
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

/** The adapters enabled by the configuration (credentials present), with their access policies. */
export function buildChannels(config: AlmanacConfig, logger: Logger): { channels: ChannelEntry[]; disabled: string[] } {
  const channels: ChannelEntry[] = [];
  const { discord, dingtalk } = config.channels;
  if (discord.token) {
    channels.push({
      adapter: createDiscordAdapter({
        token: discord.token,
        ...(discord.apiBaseUrl ? { apiBaseUrl: discord.apiBaseUrl } : {}),
        logger: logger.child({ channel: "discord" }),
      }),
      policy: policyOf(discord),
    });
  }
  if (dingtalk.clientId && dingtalk.clientSecret) {
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
