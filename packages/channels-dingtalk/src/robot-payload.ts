import { z } from "zod";

/** One element of a `richText` message: text, a picture (by download code), or something newer we keep as is. */
export const richTextItemSchema = z
  .object({
    type: z.string().optional(),
    text: z.string().optional(),
    downloadCode: z.string().optional(),
    pictureDownloadCode: z.string().optional(),
  })
  .loose();

/**
 * A robot message callback (`/v1.0/im/bot/messages/get`), validated for the fields the adapter reads.
 * Unknown fields are kept (`loose`), so `raw` holds DingTalk's whole payload.
 */
export const robotPayloadSchema = z
  .object({
    msgId: z.string().min(1),
    msgtype: z.string().min(1),
    conversationId: z.string().min(1),
    /** `1` one-on-one chat, `2` group chat. */
    conversationType: z.enum(["1", "2"]),
    conversationTitle: z.string().optional(),
    senderId: z.string().min(1),
    senderStaffId: z.string().optional(),
    senderNick: z.string().optional(),
    isInAtList: z.boolean().optional(),
    robotCode: z.string().optional(),
    createAt: z.number().optional(),
    sessionWebhook: z.url({ protocol: /^https?$/ }).optional(),
    sessionWebhookExpiredTime: z.number().optional(),
    text: z
      .object({
        content: z.string(),
        repliedMsg: z.object({ msgId: z.string().optional() }).loose().optional(),
      })
      .loose()
      .optional(),
    /** Shape depends on `msgtype` (richText, picture, file, audio, video); read with the schemas below. */
    content: z.unknown().optional(),
  })
  .loose();

/** A validated robot message payload. */
export type RobotPayload = z.infer<typeof robotPayloadSchema>;

/** `content` of a `richText` message. */
export const richTextContentSchema = z
  .object({
    richText: z.array(richTextItemSchema),
    repliedMsg: z.object({ msgId: z.string().optional() }).loose().optional(),
  })
  .loose();

/** `content` of picture, file, audio and video messages (the fields we use). */
export const mediaContentSchema = z
  .object({
    downloadCode: z.string().optional(),
    pictureDownloadCode: z.string().optional(),
    fileName: z.string().optional(),
    recognition: z.string().optional(),
    /** Audio and video: length in milliseconds. */
    duration: z.number().optional(),
  })
  .loose();

/** The `data` of a robot CALLBACK frame as sent on the stream, still JSON text. */
export const robotFrameSchema = z.object({
  headers: z.object({ messageId: z.string().min(1), topic: z.string().optional() }).loose(),
  data: z.string(),
});

/** Parses a frame's `data` text into a payload, or explains why it cannot. */
export function parseRobotPayload(
  data: string,
): { readonly ok: true; readonly payload: RobotPayload } | { readonly ok: false; readonly reason: string } {
  let json: unknown;
  try {
    json = JSON.parse(data) as unknown;
  } catch {
    return { ok: false, reason: "data is not JSON" };
  }
  const parsed = robotPayloadSchema.safeParse(json);
  return parsed.success
    ? { ok: true, payload: parsed.data }
    : { ok: false, reason: z.prettifyError(parsed.error).replaceAll("\n", "; ") };
}
