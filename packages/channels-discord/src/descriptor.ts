// The Discord channel as the server sees it: its configuration block, when it is on, its doctor check and its
// factory. Imported by the configuration loader, so it must not load discord.js (the adapter is imported only
// when the channel is enabled).
import { type ChannelDescriptor, channelAccessSettings, httpUrl, setting } from "@almanac/core";
import { z } from "zod";

/** A Discord bot token: three base64url parts separated by dots (the only shape Discord issues). */
export const DISCORD_TOKEN_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]+$/;

/** The `channels.discord` block of the configuration, with its environment variables. */
const discordSettings = z
  .strictObject({
    token: setting(
      z
        .string()
        .regex(DISCORD_TOKEN_SHAPE, {
          error:
            "expected a Discord bot token: three parts separated by dots (copy it again from the Developer Portal → Bot → Reset Token)",
        })
        .optional(),
      {
        env: "ALMANAC_DISCORD_TOKEN",
        description: "Discord bot token; setting it enables the Discord channel.",
        secret: true,
        example: "MTIz...",
      },
    ),
    apiBaseUrl: setting(httpUrl.default("https://discord.com/api"), {
      env: "ALMANAC_DISCORD_API_BASE_URL",
      description: "Discord REST base URL (set only for testing).",
    }),
    ...channelAccessSettings("ALMANAC_DISCORD", "Discord"),
  })
  .prefault({});

/** The validated `channels.discord` block. */
export type DiscordSettings = z.output<typeof discordSettings>;

/** The settings of an enabled Discord channel: the token is set. */
export type EnabledDiscordSettings = DiscordSettings & { readonly token: string };

/** Discord: a bot over the gateway (discord.js), enabled by its token. */
export const discordChannel: ChannelDescriptor<"discord", typeof discordSettings, EnabledDiscordSettings> = {
  name: "discord",
  label: "Discord",
  enabledBy: "Setting the token enables the channel.",
  settings: discordSettings,
  enabled: (settings): settings is EnabledDiscordSettings => settings.token !== undefined,
  async createAdapter(settings, { logger }) {
    const { createDiscordAdapter } = await import("./discord-adapter.js");
    // The adapter binds its own `channel` and `account` to the logger.
    return createDiscordAdapter(settings, { logger });
  },
  // The token's shape is checked when the configuration loads (a bad one stops the start).
  check: (settings) =>
    settings.token === undefined ? undefined : { status: "ok", message: "enabled (token set)" },
  capabilities: { streamingEdits: true, buttons: true, uploads: true },
};
