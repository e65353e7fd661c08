import { type Client, type RawFile, Routes } from "discord.js";
import { z } from "zod";
import { toDiscordApiError } from "./errors.js";

/** Replies may ping users (and the replied-to author) but never @everyone, @here or roles. */
export const ALLOWED_MENTIONS = { parse: ["users"], replied_user: true } as const;

/** The part of Discord's answer to a created message the adapter reads. */
const createdMessageSchema = z.object({ id: z.string().regex(/^\d+$/) });

/** What a posted message says and where it hangs: the body fields the adapter sets. */
export interface MessageBody {
  readonly content: string;
  /** The message it replies to (same channel); missing messages are ignored rather than failing the post. */
  readonly replyTo?: string;
}

/** The JSON body of a message create: content, the mentions it may ping, and the reply reference. */
export function toCreateBody(channelId: string, body: MessageBody): Record<string, unknown> {
  return {
    content: body.content,
    allowed_mentions: ALLOWED_MENTIONS,
    ...(body.replyTo === undefined
      ? {}
      : {
          message_reference: { message_id: body.replyTo, channel_id: channelId, fail_if_not_exists: false },
        }),
  };
}

/**
 * Posts a message (with `files` uploaded as multipart `files[n]`, described in `attachments`) and returns its id.
 * discord.js queues the request behind the route's rate limit and retries a 429 after Retry-After.
 * @throws DiscordApiError `discord.send_failed` when Discord refuses or answers without an id
 */
export async function postMessage(
  client: Client,
  channelId: string,
  body: Record<string, unknown>,
  files: readonly RawFile[] = [],
): Promise<string> {
  let answer: unknown;
  try {
    answer = await client.rest.post(Routes.channelMessages(channelId), {
      body:
        files.length === 0
          ? body
          : { ...body, attachments: files.map((file, id) => ({ id, filename: file.name })) },
      ...(files.length === 0 ? {} : { files: [...files] }),
    });
  } catch (error) {
    throw toDiscordApiError("discord.send_failed", `Posting to Discord channel ${channelId}`, error);
  }
  const parsed = createdMessageSchema.safeParse(answer);
  if (!parsed.success) {
    throw toDiscordApiError(
      "discord.send_failed",
      `Posting to Discord channel ${channelId}`,
      new Error("Discord answered without a message id"),
    );
  }
  return parsed.data.id;
}

/**
 * Replaces the content of one of the bot's messages.
 * @throws DiscordApiError `discord.send_failed` (status 404 when the message is gone)
 */
export async function editMessage(
  client: Client,
  channelId: string,
  messageId: string,
  content: string,
): Promise<void> {
  try {
    await client.rest.patch(Routes.channelMessage(channelId, messageId), {
      body: { content, allowed_mentions: ALLOWED_MENTIONS },
    });
  } catch (error) {
    throw toDiscordApiError(
      "discord.send_failed",
      `Editing message ${messageId} in channel ${channelId}`,
      error,
    );
  }
}

/**
 * Deletes one of the bot's messages.
 * @throws DiscordApiError `discord.send_failed`
 */
export async function deleteMessage(client: Client, channelId: string, messageId: string): Promise<void> {
  try {
    await client.rest.delete(Routes.channelMessage(channelId, messageId));
  } catch (error) {
    throw toDiscordApiError(
      "discord.send_failed",
      `Deleting message ${messageId} in channel ${channelId}`,
      error,
    );
  }
}
