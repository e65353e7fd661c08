export { startFakeDingTalk } from "./fake-dingtalk.js";
export {
  type AckRecord,
  type ConnectionRecord,
  DEFAULT_MARKDOWN_LIMIT,
  type DeliveryRecord,
  type FakeDingTalk,
  type FakeDingTalkOptions,
  MSG_PARAM_BYTE_LIMIT,
  type RejectionRecord,
  type RichTextPart,
  ROBOT_TOPIC,
  type RobotDelivery,
  type RobotMessageInput,
  type SentMessage,
  type ThrottledRoute,
} from "./types.js";
export { type WaitUntilOptions, waitUntil } from "./wait-until.js";
