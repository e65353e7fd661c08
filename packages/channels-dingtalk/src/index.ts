export { systemClock } from "./config.js";
export { DINGTALK_CHANNEL, flattenRichText, toInboundMessage } from "./convert-inbound.js";
export {
  DINGTALK_MARKDOWN_LIMIT,
  MAX_TEXT_JSON_BYTES,
  MAX_TITLE_LENGTH,
  markdownTitle,
  toDeliveryPlan,
  toMarkdownMessages,
} from "./convert-outbound.js";
export { createDingTalkAdapter, DingTalkAdapter } from "./dingtalk-adapter.js";
export * from "./error-codes.js";
export {
  DingTalkError,
  type DingTalkErrorCode,
  type DingTalkErrorOptions,
  dingTalkErrorCategories,
  isDingTalkError,
} from "./errors.js";
export { parseRobotPayload, type RobotPayload, robotPayloadSchema } from "./robot-payload.js";
export type {
  DeliveryPlan,
  DingTalkAdapterOptions,
  DingTalkAdapterSettings,
  DingTalkClock,
  DingTalkInboundRaw,
  MarkdownMessage,
  ResolvedDingTalkConfig,
} from "./types.js";
