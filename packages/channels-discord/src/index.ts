export { createDiscordAdapter, DiscordAdapter } from "./discord-adapter.js";
export { DiscordApiError, type DiscordErrorCode } from "./errors.js";
export {
  DEFAULT_DISCORD_API_BASE_URL,
  DISCORD_MESSAGE_LIMIT,
  type DiscordAdapterConfig,
} from "./types.js";
