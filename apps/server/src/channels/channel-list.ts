import { dingtalkChannel } from "@almanac/channels-dingtalk/descriptor";
import { discordChannel } from "@almanac/channels-discord/descriptor";
import { feishuChannel } from "@almanac/channels-feishu/descriptor";
import type { ChannelAccessSettings, ChannelDescriptor } from "@almanac/core";
import type { AlmanacConfig } from "../config/config-schema.js";

/**
 * Every chat platform Almanac knows, in the order the docs list them. Adding a platform is its package (with a
 * descriptor entry point) and one line here: the configuration block, the memory scope, the adapters, the doctor
 * and `.env.example` all follow this list (docs/architecture.md, "Adding a channel").
 */
export const CHANNELS = [discordChannel, feishuChannel, dingtalkChannel] as const;

/** The name of a known channel: its key under `channels` in the configuration. */
export type ChannelName = (typeof CHANNELS)[number]["name"];

/** One channel with its block of the configuration. */
export interface ConfiguredChannel {
  readonly descriptor: ChannelDescriptor;
  readonly settings: ChannelAccessSettings;
}

/** Every known channel with its block of `config.channels`, in list order (enabled or not). */
export function configuredChannels(config: AlmanacConfig): ConfiguredChannel[] {
  // Each descriptor gets the block its own schema produced; the pair is typed by what every channel shares.
  return CHANNELS.map((descriptor) => ({ descriptor, settings: config.channels[descriptor.name] }));
}

/** The access settings of the channel named `name`, or undefined when no known channel has that name. */
export function accessSettingsOf(config: AlmanacConfig, name: string): ChannelAccessSettings | undefined {
  const descriptor = CHANNELS.find((candidate) => candidate.name === name);
  return descriptor === undefined ? undefined : config.channels[descriptor.name];
}
