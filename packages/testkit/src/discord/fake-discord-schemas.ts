import { z } from "zod";

/** Discord's limit on `content` of a message, in characters. */
export const MAX_CONTENT_LENGTH = 2000;

/** Gateway intent bit of privileged MESSAGE_CONTENT. */
export const MESSAGE_CONTENT_INTENT = 1 << 15;

const snowflake = z.string().regex(/^\d+$/);

/** Any frame a gateway client sends. */
export const gatewayFrameSchema = z.object({ op: z.number().int(), d: z.unknown() });

/** IDENTIFY (op 2) data. */
export const identifySchema = z.object({
  token: z.string(),
  intents: z.number().int().nonnegative(),
  properties: z.record(z.string(), z.unknown()),
  shard: z.tuple([z.number().int(), z.number().int()]).optional(),
});

/** RESUME (op 6) data. */
export const resumeSchema = z.object({
  token: z.string(),
  session_id: z.string(),
  seq: z.number().int().nullable(),
});

/** Body of `POST /channels/:id/messages` (the fields the fake understands; others are ignored). */
export const createMessageBodySchema = z.object({
  content: z.string().optional(),
  nonce: z.union([z.string(), z.number()]).optional(),
  tts: z.boolean().optional(),
  embeds: z.array(z.unknown()).optional(),
  allowed_mentions: z
    .object({
      parse: z.array(z.enum(["users", "roles", "everyone"])).optional(),
      users: z.array(snowflake).optional(),
      roles: z.array(snowflake).optional(),
      replied_user: z.boolean().optional(),
    })
    .optional(),
  message_reference: z
    .object({
      type: z.number().int().optional(),
      message_id: snowflake,
      channel_id: snowflake.optional(),
      guild_id: snowflake.optional(),
      fail_if_not_exists: z.boolean().optional(),
    })
    .optional(),
  flags: z.number().int().optional(),
});

/** Body of `POST /users/@me/channels` (open a DM). */
export const createDmBodySchema = z.object({ recipient_id: snowflake });

/** Discord's 400 "Invalid Form Body" error, with one field error like the API's. */
export function invalidFormBody(field: string, code: string, message: string): Record<string, unknown> {
  return {
    message: "Invalid Form Body",
    code: 50035,
    errors: { [field]: { _errors: [{ code, message }] } },
  };
}
