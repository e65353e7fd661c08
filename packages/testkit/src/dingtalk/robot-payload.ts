import type { RobotMediaInput, RobotMessageInput } from "./types.js";

/** Ids and URLs the fake fills into a robot payload. */
export interface RobotPayloadContext {
  readonly msgId: string;
  readonly robotCode: string;
  readonly sessionWebhook: string;
  readonly sessionWebhookExpiredTime: number;
  readonly now: number;
}

const CORP_ID = "dingfakecorp";
const ROBOT_USER_ID = "$:LWCP_v1:$fakerobot";

/** The conversation a robot message belongs to, as the fake tracks it for sessionWebhook replies. */
export interface RobotConversation {
  readonly conversationType: "1" | "2";
  readonly conversationId: string;
  readonly senderStaffId?: string;
}

/** Resolves the conversation of an input (defaults included). */
export function robotConversation(input: RobotMessageInput): RobotConversation {
  const staffId = input.senderStaffId === undefined ? "staff-001" : input.senderStaffId;
  const conversationType = input.conversation === "single" ? "1" : "2";
  const conversationId =
    input.conversationId ??
    (conversationType === "1" ? `cid-dm-${staffId ?? "external"}==` : "cid-group-1==");
  return staffId === null
    ? { conversationType, conversationId }
    : { conversationType, conversationId, senderStaffId: staffId };
}

/**
 * Builds a robot callback payload in DingTalk's shape (see "接收消息" in DingTalk's robot docs):
 * group text starts with a space (the @robot mention is cut out), single chats carry no `isInAtList`.
 */
export function buildRobotPayload(
  input: RobotMessageInput,
  context: RobotPayloadContext,
): Record<string, unknown> {
  const conversation = robotConversation(input);
  const isGroup = conversation.conversationType === "2";
  const staffId = conversation.senderStaffId;
  const payload: Record<string, unknown> = {
    conversationId: conversation.conversationId,
    chatbotCorpId: CORP_ID,
    chatbotUserId: ROBOT_USER_ID,
    msgId: context.msgId,
    senderNick: input.senderNick ?? "Alice",
    isAdmin: false,
    sessionWebhookExpiredTime: context.sessionWebhookExpiredTime,
    createAt: context.now,
    senderCorpId: CORP_ID,
    conversationType: conversation.conversationType,
    senderId: input.senderId ?? `$:LWCP_v1:$${staffId ?? "external-user"}`,
    sessionWebhook: context.sessionWebhook,
    robotCode: context.robotCode,
  };
  if (staffId !== undefined) payload.senderStaffId = staffId;
  if (isGroup) {
    payload.conversationTitle = input.conversationTitle ?? "Test Group";
    const mentioned = input.isInAtList ?? true;
    payload.isInAtList = mentioned;
    if (mentioned) payload.atUsers = [{ dingtalkId: ROBOT_USER_ID }];
  } else if (input.isInAtList !== undefined) {
    payload.isInAtList = input.isInAtList;
  }
  if (input.media !== undefined) {
    payload.msgtype = input.media.type;
    payload.content = mediaContent(input.media);
  } else if (input.richText !== undefined) {
    payload.msgtype = "richText";
    payload.content = {
      richText: input.richText.map((part) =>
        "picture" in part
          ? { type: "picture", downloadCode: part.picture, pictureDownloadCode: `pic-${part.picture}` }
          : { text: part.text },
      ),
    };
  } else {
    const text = input.text ?? "";
    payload.msgtype = "text";
    payload.text = { content: isGroup ? ` ${text}` : text };
  }
  return { ...payload, ...input.extra };
}

/** `content` of a picture, file, audio or video message, in DingTalk's shape. */
function mediaContent(media: RobotMediaInput): Record<string, unknown> {
  const { downloadCode } = media;
  switch (media.type) {
    case "picture":
      return { downloadCode, pictureDownloadCode: `pic-${downloadCode}` };
    case "file":
      return {
        downloadCode,
        fileName: media.fileName ?? "file",
        fileId: `file-${downloadCode}`,
        spaceId: "1",
      };
    case "audio":
      return {
        downloadCode,
        duration: media.duration ?? 3_000,
        ...(media.recognition === undefined ? {} : { recognition: media.recognition }),
      };
    case "video":
      return { downloadCode, duration: media.duration ?? 5_000, videoType: "mp4" };
  }
}
