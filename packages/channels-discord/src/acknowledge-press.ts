import { type Client, InteractionResponseType, Routes } from "discord.js";
import type { DiscordButtonPress } from "./discord-interaction-schema.js";

/**
 * The interaction response that acknowledges a press. In a DM only the person in it can press, so the buttons go
 * with the press (UPDATE_MESSAGE without components): a second press is impossible. In a guild channel anyone who
 * reads it can press, and the server may refuse the press (a stranger cannot answer the owner's approval); removing
 * the buttons then would take them away from the person they are for, so the message is left as it is
 * (DEFERRED_UPDATE_MESSAGE) and a second press gets the server's answer ("already approved").
 */
export function pressAcknowledgement(press: DiscordButtonPress) {
  return press.guildId === undefined
    ? { type: InteractionResponseType.UpdateMessage, data: { components: [] } }
    : { type: InteractionResponseType.DeferredMessageUpdate };
}

/**
 * Acknowledges a press over REST (`POST /interactions/{id}/{token}/callback`), which Discord requires within
 * 3 seconds or it tells the presser "This interaction failed". The interaction token authenticates the call,
 * not the bot token.
 * @throws whatever the REST client threw (the caller logs it: the press itself still counts).
 */
export async function acknowledgePress(client: Client, press: DiscordButtonPress): Promise<void> {
  await client.rest.post(Routes.interactionCallback(press.id, press.token), {
    body: pressAcknowledgement(press),
    auth: false,
  });
}
