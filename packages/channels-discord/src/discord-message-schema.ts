import { z } from "zod";

/** A Discord id: a decimal snowflake, as the API sends it (a string). */
export const snowflake = z.string().regex(/^\d+$/, "a Discord snowflake id");

/** The fields of a Discord user object the adapter reads. */
export const userSchema = z.object({
  id: snowflake,
  username: z.string(),
  global_name: z.string().nullish(),
  bot: z.boolean().optional(),
  system: z.boolean().optional(),
});

/** The fields of a guild member object the adapter reads. */
export const memberSchema = z.object({ nick: z.string().nullish() });

const attachmentSchema = z.object({
  id: snowflake,
  filename: z.string(),
  url: z.string(),
  content_type: z.string().optional(),
  size: z.number().optional(),
  /** Voice messages: the recording's length in seconds. */
  duration_secs: z.number().optional(),
});

/** Message flag IS_VOICE_MESSAGE: the message is a voice message recorded in the app. */
export const VOICE_MESSAGE_FLAG = 1 << 13;

/**
 * The fields of a gateway MESSAGE_CREATE payload the adapter reads (Discord API v10). Everything else is
 * ignored here and kept untouched on `InboundMessage.raw`.
 */
export const messageCreateSchema = z.object({
  id: snowflake,
  channel_id: snowflake,
  guild_id: snowflake.optional(),
  author: userSchema,
  member: memberSchema.optional(),
  content: z.string(),
  type: z.number().int(),
  flags: z.number().int().optional(),
  webhook_id: snowflake.optional(),
  mentions: z.array(userSchema.extend({ member: memberSchema.optional() })).default([]),
  mention_roles: z.array(snowflake).default([]),
  attachments: z.array(attachmentSchema).default([]),
  message_reference: z
    .object({
      /** 0 = reply (default), 1 = forward. */
      type: z.number().int().optional(),
      message_id: snowflake.optional(),
      channel_id: snowflake.optional(),
    })
    .optional(),
  referenced_message: z.object({ id: snowflake, author: userSchema }).nullish(),
});

/** A validated MESSAGE_CREATE payload. */
export type DiscordMessagePayload = z.infer<typeof messageCreateSchema>;

/** Message types that carry something a person said: DEFAULT (0) and REPLY (19). The rest is system noise. */
export const CONVERSATIONAL_MESSAGE_TYPES: ReadonlySet<number> = new Set([0, 19]);
