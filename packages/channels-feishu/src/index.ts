export { convertContent, FEISHU_CHANNEL, type InboundContext, toInboundMessage } from "./convert-inbound.js";
export { FEISHU_POST_BODY_LIMIT_BYTES, markdownToPostContents, toPostContent } from "./convert-outbound.js";
export * from "./error-codes.js";
export { FeishuApiError, type FeishuApiErrorOptions } from "./errors.js";
export type { FeishuCardActionEvent, FeishuReceiveEvent } from "./event-schema.js";
export { createFeishuAdapter, FeishuAdapter } from "./feishu-adapter.js";
export type {
  FeishuAdapterOptions,
  FeishuAdapterSettings,
  FeishuCardActionRaw,
  FeishuInboundRaw,
  FeishuMode,
  FeishuWebhookRequest,
  FeishuWebhookResponse,
} from "./types.js";
