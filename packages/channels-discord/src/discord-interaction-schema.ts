import { z } from "zod";
import { memberSchema, snowflake, userSchema } from "./discord-message-schema.js";

/** Interaction type MESSAGE_COMPONENT: someone used a component (a button) on a message. */
const MESSAGE_COMPONENT_INTERACTION = 3;

/** Component type BUTTON. */
const BUTTON_COMPONENT = 2;

/**
 * Prefix of the `custom_id` of every button the adapter posts; what follows it is the button's `reply`.
 * Presses of buttons without it are not the adapter's and are left alone.
 */
export const BUTTON_CUSTOM_ID_PREFIX = "almanac:";

/** Any JSON object, every field kept as it came. */
const payloadSchema = z.record(z.string(), z.unknown());

/** Just enough of an INTERACTION_CREATE payload to tell whether it is a press of one of the adapter's buttons. */
const interactionKindSchema = z.object({
  type: z.number().int(),
  data: z
    .object({ custom_id: z.string().optional(), component_type: z.number().int().optional() })
    .optional(),
});

/**
 * The fields of a gateway INTERACTION_CREATE for a button press the adapter reads (Discord API v10). The
 * presser is `member.user` in a guild and `user` in a DM; `channel_id` is deprecated in favour of `channel.id`
 * but still sent, so either is taken.
 */
const buttonPressSchema = z
  .object({
    id: snowflake,
    type: z.literal(MESSAGE_COMPONENT_INTERACTION),
    token: z.string().min(1),
    guild_id: snowflake.optional(),
    channel_id: snowflake.optional(),
    channel: z.object({ id: snowflake }).optional(),
    member: memberSchema.extend({ user: userSchema }).optional(),
    user: userSchema.optional(),
    data: z.object({ custom_id: z.string(), component_type: z.literal(BUTTON_COMPONENT) }),
    message: z.object({ id: snowflake }),
  })
  .transform((payload, context) => {
    const presser = payload.member?.user ?? payload.user;
    const channelId = payload.channel?.id ?? payload.channel_id;
    if (presser === undefined || channelId === undefined) {
      context.addIssue({
        code: "custom",
        message: presser === undefined ? "no member.user or user: who pressed?" : "no channel id",
      });
      return z.NEVER;
    }
    return {
      id: payload.id,
      token: payload.token,
      channelId,
      guildId: payload.guild_id,
      presser,
      /** The presser as a guild member (their server nickname), in guilds only. */
      member: payload.member,
      customId: payload.data.custom_id,
      messageId: payload.message.id,
    };
  });

/** A validated press of one of the adapter's buttons. */
export type DiscordButtonPress = z.output<typeof buttonPressSchema>;

/** What an INTERACTION_CREATE turned out to be. */
export type ParsedInteraction =
  /** `raw` is the payload without its interaction token (a credential for 15 minutes), for `InboundMessage.raw`. */
  | { readonly kind: "press"; readonly press: DiscordButtonPress; readonly raw: Record<string, unknown> }
  /** Not a press of one of the adapter's buttons (a slash command, another app's component…). */
  | { readonly kind: "ignored" }
  | { readonly kind: "invalid"; readonly error: string };

/** Validates a gateway INTERACTION_CREATE payload (`d`), received as `unknown`. */
export function parseInteraction(data: unknown): ParsedInteraction {
  const kind = interactionKindSchema.safeParse(data);
  if (!kind.success || !isOwnPress(kind.data)) return { kind: "ignored" };
  const parsed = buttonPressSchema.safeParse(data);
  if (!parsed.success) return { kind: "invalid", error: parsed.error.message };
  const { token: _token, ...raw } = payloadSchema.parse(data);
  return { kind: "press", press: parsed.data, raw };
}

/**
 * True when `data` (an INTERACTION_CREATE payload, or an inbound message's `raw`) is a press of one of the
 * adapter's buttons rather than a message or anything else.
 */
export function isButtonPressPayload(data: unknown): boolean {
  const kind = interactionKindSchema.safeParse(data);
  return kind.success && isOwnPress(kind.data);
}

function isOwnPress(kind: z.output<typeof interactionKindSchema>): boolean {
  return (
    kind.type === MESSAGE_COMPONENT_INTERACTION &&
    kind.data?.component_type === BUTTON_COMPONENT &&
    kind.data.custom_id?.startsWith(BUTTON_CUSTOM_ID_PREFIX) === true
  );
}
