export {
  type FakeAttachmentInput,
  type FakeDiscord,
  type FakeDiscordOptions,
  type FakeGatewayEvent,
  type FakeMessageInput,
  type FakeShownMessage,
  startFakeDiscord,
} from "./fake-discord.js";
export type { FakeCdnRequest } from "./fake-discord-cdn.js";
export { GatewayClose, type RecordedIdentify } from "./fake-discord-gateway.js";
export type { FakeInteractionCallback, FakePressInput } from "./fake-discord-interactions.js";
export type { FakeMessageDeletion, FakeMessageEdit } from "./fake-discord-message-edits.js";
export type {
  FakeHeldResponse,
  FakeRateLimitHit,
  FakeSentMessage,
  FakeTypingCall,
  FakeUploadedFile,
  RecordedRestRequest,
} from "./fake-discord-rest.js";
export {
  DEFAULT_UPLOAD_LIMIT_BYTES,
  type FakeActionRow,
  type FakeButton,
  MAX_CONTENT_LENGTH,
  MAX_NONCE_LENGTH,
  MESSAGE_CONTENT_INTENT,
} from "./fake-discord-schemas.js";
export {
  FAKE_DISCORD_TOKEN,
  type FakeDiscordIds,
  type FakeDiscordUser,
  type FakeDiscordWorld,
} from "./fake-discord-world.js";
export { type WaitUntilOptions, waitUntil } from "./wait-until.js";
