import { z } from "zod";

/** Discord's limit on `content` of a message, in characters. */
export const MAX_CONTENT_LENGTH = 2000;

/** Discord's limit on a message `nonce` string, in characters. */
export const MAX_NONCE_LENGTH = 25;

/** Discord's limit on files in one message. */
export const MAX_FILES_PER_MESSAGE = 10;

/**
 * Discord's default upload limit per file for a bot, in bytes: 10 MiB (a guild's boost level raises it; 413 with
 * code 40005 above it).
 */
export const DEFAULT_UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;

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

/** Discord's limits on message components (API v10). */
export const COMPONENT_LIMITS = { rows: 5, buttonsPerRow: 5, customId: 100, label: 80 } as const;

/** Button styles: primary, secondary, success, danger (with `custom_id`), link (with `url`), premium (with `sku_id`). */
const ButtonStyle = { Link: 5, Premium: 6 } as const;

/** A button (component type 2) in a message a bot sends. */
const buttonSchema = z
  .object({
    type: z.literal(2),
    id: z.number().int().optional(),
    style: z.number().int().min(1).max(6),
    label: z.string().max(COMPONENT_LIMITS.label).optional(),
    emoji: z.object({ id: snowflake.nullish(), name: z.string().nullish() }).optional(),
    custom_id: z.string().min(1).max(COMPONENT_LIMITS.customId).optional(),
    url: z.string().url().optional(),
    sku_id: snowflake.optional(),
    disabled: z.boolean().optional(),
  })
  .superRefine((button, context) => {
    const needs = (field: "custom_id" | "url" | "sku_id", present: boolean) => {
      if (!present) context.addIssue({ code: "custom", path: [field], message: "This field is required" });
    };
    const refuses = (field: "custom_id" | "url", present: boolean) => {
      if (present) context.addIssue({ code: "custom", path: [field], message: "This field is not allowed" });
    };
    if (button.style === ButtonStyle.Link) {
      needs("url", button.url !== undefined);
      refuses("custom_id", button.custom_id !== undefined);
    } else if (button.style === ButtonStyle.Premium) {
      needs("sku_id", button.sku_id !== undefined);
    } else {
      needs("custom_id", button.custom_id !== undefined);
      refuses("url", button.url !== undefined);
    }
    if (button.style !== ButtonStyle.Premium && button.label === undefined && button.emoji === undefined) {
      context.addIssue({ code: "custom", path: ["label"], message: "A button needs a label or an emoji" });
    }
  });

/** A button as the fake understands it (the only component it accepts inside an action row). */
export type FakeButton = z.output<typeof buttonSchema>;

/** An action row (component type 1) of up to five buttons. */
const actionRowSchema = z.object({
  type: z.literal(1),
  id: z.number().int().optional(),
  components: z.array(buttonSchema).min(1).max(COMPONENT_LIMITS.buttonsPerRow),
});

/** An action row as the fake understands it. */
export type FakeActionRow = z.output<typeof actionRowSchema>;

/** The `components` of a message: up to five action rows, `custom_id`s unique across the message. */
export const componentsSchema = z
  .array(actionRowSchema)
  .max(COMPONENT_LIMITS.rows)
  .superRefine((rows, context) => {
    const seen = new Set<string>();
    for (const [rowIndex, row] of rows.entries()) {
      for (const [index, button] of row.components.entries()) {
        if (button.custom_id === undefined) continue;
        if (seen.has(button.custom_id)) {
          context.addIssue({
            code: "custom",
            path: [rowIndex, "components", index, "custom_id"],
            message: "Component custom id cannot be duplicated",
          });
        }
        seen.add(button.custom_id);
      }
    }
  });

/** Body of `POST /channels/:id/messages` (the fields the fake understands; others are ignored). */
export const createMessageBodySchema = z.object({
  content: z.string().optional(),
  components: componentsSchema.optional(),
  /** Discord: up to 25 characters; echoed on the message and in MESSAGE_CREATE. */
  nonce: z.union([z.string().max(MAX_NONCE_LENGTH), z.number().int()]).optional(),
  /** With a nonce: a message this author created with the same nonce a few minutes before is returned instead. */
  enforce_nonce: z.boolean().optional(),
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
  /** With uploaded files: metadata of each, `id` being the index `n` of its `files[n]` part. */
  attachments: z
    .array(
      z.object({
        id: z.union([z.number().int().nonnegative(), z.string().regex(/^\d+$/)]),
        filename: z.string().optional(),
        description: z.string().max(1024).optional(),
      }),
    )
    .max(MAX_FILES_PER_MESSAGE)
    .optional(),
});

/** Body of `PATCH /channels/:id/messages/:id` (edit a message); omitted fields keep their value. */
export const editMessageBodySchema = z.object({
  content: z.string().nullish(),
  components: componentsSchema.nullish(),
  embeds: z.array(z.unknown()).nullish(),
  allowed_mentions: z.unknown().optional(),
  flags: z.number().int().nullish(),
  attachments: z.array(z.unknown()).optional(),
});

/** Interaction response types the fake acts on for a component press: DEFERRED_UPDATE_MESSAGE and UPDATE_MESSAGE. */
export const InteractionResponse = { DeferredUpdateMessage: 6, UpdateMessage: 7 } as const;

/** Body of `POST /interactions/:id/:token/callback`. */
export const interactionCallbackBodySchema = z.object({
  type: z.number().int(),
  data: z
    .object({
      content: z.string().max(MAX_CONTENT_LENGTH).optional(),
      components: componentsSchema.optional(),
      embeds: z.array(z.unknown()).optional(),
      allowed_mentions: z.unknown().optional(),
      flags: z.number().int().optional(),
    })
    .optional(),
});

/** Body of `POST /users/@me/channels` (open a DM). */
export const createDmBodySchema = z.object({ recipient_id: snowflake });

/**
 * Discord's 400 "Invalid Form Body" error for the first problem zod found, nested along its path the way the API
 * nests field errors (`errors.components.0.components.0.custom_id._errors`).
 */
export function invalidFormBodyFrom(error: z.ZodError): Record<string, unknown> {
  const issue = error.issues[0];
  const path = issue?.path.map(String) ?? [];
  const code =
    issue?.code === "too_big" || issue?.code === "too_small" ? "BASE_TYPE_BAD_LENGTH" : "BASE_TYPE_INVALID";
  let errors: Record<string, unknown> = { _errors: [{ code, message: issue?.message ?? "Invalid" }] };
  for (const segment of [...path].reverse()) errors = { [segment]: errors };
  return { message: "Invalid Form Body", code: 50035, errors };
}

/** Discord's 400 "Invalid Form Body" error, with one field error like the API's. */
export function invalidFormBody(field: string, code: string, message: string): Record<string, unknown> {
  return {
    message: "Invalid Form Body",
    code: 50035,
    errors: { [field]: { _errors: [{ code, message }] } },
  };
}
