import { type CodesOf, defineErrorCodes } from "@almanac/core";

/** Every code the Discord adapter throws. */
export const discordErrorCodes = defineErrorCodes({
  "discord.config_invalid": { category: "user" },
  /** Discord refused the bot token (REST 401 or gateway close 4004). */
  "discord.auth_failed": { category: "user" },
  /** The gateway refused the connection for a reason retrying cannot fix (intents, sharding, version). */
  "discord.gateway_refused": { category: "user" },
  "discord.target_invalid": { category: "user" },
  "discord.not_started": { category: "internal" },
  "discord.already_started": { category: "internal" },
  "discord.connect_failed": { category: "provider" },
  "discord.send_failed": { category: "provider" },
  /** A file to send is larger than Discord takes from a bot (10 MiB without boosts). */
  "discord.file_too_large": { category: "user" },
  /** An attachment's URL is not on Discord's CDN (or the configured REST base's origin): it is never fetched. */
  "discord.download_refused": { category: "user" },
  "discord.download_failed": { category: "provider" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof discordErrorCodes> {}
}
