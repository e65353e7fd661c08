import type { Logger } from "@almanac/core";
import type { AlmanacConfig } from "../config/config-schema.js";
import type { ChannelEntry } from "./channel-hub.js";

/** Every chat platform Almanac knows. */
export const KNOWN_CHANNELS = ["discord", "feishu", "dingtalk"] as const;

/** The adapters enabled by the configuration (credentials present), with their access policies. */
export function buildChannels(
  _config: AlmanacConfig,
  _logger: Logger,
): { channels: ChannelEntry[]; disabled: string[] } {
  const channels: ChannelEntry[] = [];
  const enabled = new Set(channels.map((entry) => entry.adapter.name));
  return { channels, disabled: KNOWN_CHANNELS.filter((name) => !enabled.has(name)) };
}
