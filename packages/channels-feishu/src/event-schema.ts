import { z } from "zod";

// Feishu sends "" for absent optional ids in some payloads; treat that like a missing field.
const optionalId = z
  .string()
  .nullish()
  .transform((value) => (value === null || value === undefined || value === "" ? undefined : value));

const userIdSchema = z.object({
  open_id: optionalId,
  union_id: optionalId,
  user_id: optionalId,
});

/** One entry of `message.mentions`: `key` is the placeholder (`@_user_1`) used in the content. */
export const mentionSchema = z.object({
  key: z.string(),
  id: userIdSchema.optional(),
  name: z.string().optional(),
  tenant_key: z.string().optional(),
});

/** A mention as parsed from an event. */
export type FeishuMention = z.infer<typeof mentionSchema>;

/**
 * `im.message.receive_v1` as the SDK's EventDispatcher hands it to a handler: the v2 envelope's `header`
 * fields (`event_id`, `event_type`, `tenant_key`, …) merged with the `event` object.
 */
export const receiveEventSchema = z.object({
  event_id: optionalId,
  event_type: z.string().optional(),
  tenant_key: optionalId,
  app_id: optionalId,
  sender: z.object({
    sender_id: userIdSchema.optional(),
    sender_type: z.string().optional(),
    tenant_key: z.string().optional(),
  }),
  message: z.object({
    message_id: z.string().min(1),
    root_id: optionalId,
    parent_id: optionalId,
    thread_id: optionalId,
    create_time: z.string().optional(),
    chat_id: z.string().min(1),
    chat_type: z.string(),
    message_type: z.string(),
    content: z.string(),
    mentions: z.array(mentionSchema).nullish(),
  }),
});

/** A validated `im.message.receive_v1` event. */
export type FeishuReceiveEvent = z.infer<typeof receiveEventSchema>;

/** `content` of a text message. */
export const textContentSchema = z.object({ text: z.string() });

/** One element of a rich-text paragraph; the fields used depend on `tag`. */
const postElementSchema = z.looseObject({
  tag: z.string(),
  text: z.string().optional(),
  href: z.string().optional(),
  user_id: z.string().optional(),
  user_name: z.string().optional(),
  image_key: z.string().optional(),
  file_key: z.string().optional(),
  emoji_type: z.string().optional(),
  language: z.string().optional(),
});

/** A rich-text element as parsed. */
export type FeishuPostElement = z.infer<typeof postElementSchema>;

/** `content` of a post as events deliver it: `{title, content: [[element, …], …]}`. */
export const postContentSchema = z.object({
  title: z.string().nullish(),
  content: z.array(z.array(postElementSchema)),
});

/** A post wrapped per locale (`{zh_cn: {title, content}}`), the form used when sending. */
export const postLocalesSchema = z.record(z.string(), postContentSchema);

/** `content` of image, file, audio, media and sticker messages (only the keys Almanac reads). */
export const resourceContentSchema = z.object({
  image_key: z.string().optional(),
  file_key: z.string().optional(),
  file_name: z.string().optional(),
  /** Audio and media messages: length in milliseconds. */
  duration: z.number().optional(),
});

/**
 * `card.action.trigger` (a button pressed on a card the bot sent) as the SDK's EventDispatcher hands it to a
 * handler: the envelope's `header` merged with `event`, so `token` is the event's own action token.
 */
export const cardActionEventSchema = z.object({
  event_id: optionalId,
  event_type: z.string().optional(),
  tenant_key: optionalId,
  app_id: optionalId,
  /** The action token (`c-…`): one per press. */
  token: optionalId,
  operator: userIdSchema,
  action: z.looseObject({
    /** The pressed button's `value`, as the card defined it. */
    value: z.unknown(),
    tag: z.string().optional(),
    name: z.string().optional(),
  }),
  host: z.string().optional(),
  context: z.object({
    open_message_id: z.string().min(1),
    open_chat_id: z.string().min(1),
  }),
});

/** A validated `card.action.trigger` event. */
export type FeishuCardActionEvent = z.infer<typeof cardActionEventSchema>;
