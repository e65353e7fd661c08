export {
  buttonsOf,
  cardProblem,
  type FakeCardButton,
  type FakeCardToast,
  isSharedCard,
  readCallbackAnswer,
} from "./cards.js";
export {
  type BuiltCardAction,
  type BuiltMessageEvent,
  buildCardActionEvent,
  buildMessageEvent,
  buildUrlVerification,
  type FakeCardActionSpec,
  type FakeEventContext,
  type FakeFeishuMention,
  type FakeFeishuUser,
  type FakeMessageSpec,
  type FakePostElement,
} from "./events.js";
export {
  type FakeButtonPress,
  type FakeCardAction,
  type FakeFeishu,
  type FakeFeishuOptions,
  type SendEventOptions,
  type SentEvent,
  startFakeFeishu,
  type WaitUntilOptions,
  waitUntil,
} from "./fake-feishu.js";
export { decodeFrame, encodeFrame, type FeishuFrame, FRAME_METHOD, frameHeader } from "./frame-codec.js";
export type { FakeFeishuAck } from "./long-connection.js";
export {
  type FakeResource,
  type FakeUpload,
  FEISHU_FILE_UPLOAD_LIMIT_BYTES,
  FEISHU_IMAGE_UPLOAD_LIMIT_BYTES,
} from "./resources.js";
export type {
  FailureOptions,
  FakeCardUpdate,
  FakeHeldResponse,
  FakeReaction,
  FakeRestRequest,
  FakeSentMessage,
  RateLimitOptions,
} from "./rest-api.js";
export {
  encryptFeishuPayload,
  postWebhook,
  signFeishuRequest,
  type WebhookDeliveryOptions,
  type WebhookResponse,
} from "./webhook-delivery.js";
