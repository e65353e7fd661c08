import type { ChannelAccessSettings, Logger } from "@almanac/core";
import type { AlmanacConfig } from "../config/config-schema.js";
import type { AccessPolicy } from "./access-policy.js";
import type { ChannelEntry } from "./channel-hub.js";
import { configuredChannels } from "./channel-list.js";

function policyOf(settings: ChannelAccessSettings): AccessPolicy {
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
 * The adapters of the channels the configuration enables (credentials present), with their access policies, and
 * the names of the others. A channel's adapter and its platform SDK are loaded only when the channel is enabled
 * (discord.js alone takes a few hundred milliseconds to load).
 */
export async function buildChannels(
  config: AlmanacConfig,
  logger: Logger,
): Promise<{ channels: ChannelEntry[]; disabled: string[] }> {
  const channels: ChannelEntry[] = [];
  const disabled: string[] = [];
  for (const { descriptor, settings } of configuredChannels(config)) {
    if (!descriptor.enabled(settings)) {
      disabled.push(descriptor.name);
      continue;
    }
    channels.push({
      adapter: await descriptor.createAdapter(settings, { logger }),
      policy: policyOf(settings),
    });
  }
  return { channels, disabled };
}
