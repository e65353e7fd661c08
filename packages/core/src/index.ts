export {
  type AttachmentDownloadAdapter,
  AttachmentTooLargeError,
  type ChannelAccessSettings,
  type ChannelAdapter,
  type ChannelAdapterOptions,
  type ChannelCapabilities,
  type ChannelCheck,
  type ChannelDescriptor,
  type ChannelSettingsSchema,
  type ChannelStatus,
  type Conversation,
  canDownloadAttachments,
  canSendFiles,
  canStreamReplies,
  channelAccessSettings,
  type DownloadedAttachment,
  type DownloadLimits,
  type FileSendingAdapter,
  hasTypingIndicator,
  hasWebhook,
  type InboundAttachment,
  type InboundMessage,
  type MessageButton,
  type OutboundFile,
  type OutboundMessage,
  type ReplyStream,
  type Sender,
  type StreamingReplyAdapter,
  type TypingIndicatorAdapter,
  type WebhookAdapter,
  type WebhookRequest,
  type WebhookResponse,
} from "./channel.js";
export type {
  ChatModel,
  ChatRequest,
  ChatResponse,
  ChatStreamEvent,
  Embedder,
  EmbedOptions,
  FinishReason,
  ToolChoice,
  ToolSpec,
  Usage,
} from "./chat-model.js";

export {
  AlmanacError,
  type AlmanacErrorCodes,
  type AlmanacErrorOptions,
  type CodesOf,
  coreErrorCodes,
  defineErrorCodes,
  describeError,
  type ErrorCategory,
  type ErrorCode,
  type ErrorCodeInfo,
  errnoCode,
  InternalError,
  isAlmanacError,
  isErrnoCode,
  ProviderError,
  type ProviderErrorOptions,
  UserError,
} from "./errors.js";
export { groupCalls } from "./grouped-calls.js";
export { type LinkedSignal, linkAbortSignals } from "./linked-signal.js";
export { type Logger, silentLogger } from "./logger.js";
export * from "./message.js";
export { contentBlockSchema, messageSchema } from "./message-schema.js";
export {
  formatSessionKey,
  HASHED_STEM_PREFIX_LENGTH,
  isSessionKey,
  MAX_PLAIN_STEM_LENGTH,
  parseSessionKey,
  type SessionKeyParts,
  type SessionKind,
  sessionKeyToFileStem,
} from "./session-key.js";
export { httpUrl, type SettingMeta, setting, settingRegistry } from "./settings.js";
export { splitMessage } from "./split-message.js";
export type { TokenCounter, TokenCountMethod, TokenEncoding } from "./token-counter.js";
export { MISSING_TOOL_RESULT_TEXT, repairToolPairs } from "./tool-pairs.js";
