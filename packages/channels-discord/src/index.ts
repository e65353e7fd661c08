export { createDiscordAdapter, DiscordAdapter } from "./discord-adapter.js";
export * from "./error-codes.js";
export { DiscordApiError, type DiscordErrorCode } from "./errors.js";
export {
  DISCORD_MESSAGE_LIMIT,
  type DiscordAdapterOptions,
  type DiscordAdapterSettings,
} from "./types.js";
