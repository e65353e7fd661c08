import { randomBytes } from "node:crypto";
import {
  componentsSchema,
  type FakeButton,
  InteractionResponse,
  interactionCallbackBodySchema,
  invalidFormBodyFrom,
} from "./fake-discord-schemas.js";
import {
  channelPayload,
  type FakeChannel,
  type FakeDiscordUser,
  type FakeDiscordWorld,
  memberPayload,
  userPayload,
  withComponentIds,
} from "./fake-discord-world.js";

/** Interaction type MESSAGE_COMPONENT. */
const MESSAGE_COMPONENT = 3;
/** Interaction context types: in a guild, or in the bot's DM. */
const InteractionContext = { Guild: 0, BotDm: 1 } as const;
/** Everything a member of the fake guild may do, as the permissions string Discord sends. */
const MEMBER_PERMISSIONS = "2248473465835073";

/** A press of a button, for {@link FakeDiscord.pressButton}. */
export interface FakePressInput {
  /** The message the button is on: its object (e.g. `fake.sent()[0].message`) or its id. */
  readonly message: Record<string, unknown> | string;
  /** Which button: by `custom_id`, or by label (the first with that label). One of the two is needed. */
  readonly customId?: string;
  readonly label?: string;
  /** Who presses; default the world's human user. In a DM only the person the DM is with can press. */
  readonly author?: FakeDiscordUser;
}

/** An interaction callback the fake accepted (`POST /interactions/:id/:token/callback`). */
export interface FakeInteractionCallback {
  readonly interactionId: string;
  /** The interaction response type (6 DEFERRED_UPDATE_MESSAGE, 7 UPDATE_MESSAGE). */
  readonly type: number;
  readonly data?: unknown;
  /** Milliseconds from the press to the callback (Discord allows 3000). */
  readonly delayMs: number;
  readonly at: number;
}

/** A REST answer of the fake. */
export interface FakeRestReply {
  readonly status: number;
  readonly body?: unknown;
}

/** What the interaction half needs from the rest of the fake. */
export interface FakeInteractionDependencies {
  readonly world: FakeDiscordWorld;
  readonly channel: (id: string) => FakeChannel | undefined;
  readonly message: (id: string) => Record<string, unknown> | undefined;
  readonly nextId: () => string;
  /** Stores an edited message and dispatches MESSAGE_UPDATE, as Discord does after UPDATE_MESSAGE. */
  readonly updated: (message: Record<string, unknown>) => void;
  /** How long an interaction can be acknowledged (Discord: 3000 ms). */
  readonly acknowledgeWithinMs: number;
  /** Milliseconds since the epoch, for that deadline. */
  readonly clock: () => number;
}

/** Button presses (INTERACTION_CREATE payloads) and their acknowledgement over REST. */
export interface FakeInteractions {
  /** The INTERACTION_CREATE payload of a press; the caller dispatches it. @throws when nobody could press that. */
  press(input: FakePressInput): Record<string, unknown>;
  /** Answers `POST /interactions/:id/:token/callback`. */
  callback(id: string, token: string, body: unknown, withResponse: boolean): FakeRestReply;
  callbacks(): readonly FakeInteractionCallback[];
}

interface Issued {
  readonly id: string;
  readonly token: string;
  readonly messageId: string;
  readonly createdAt: number;
  acknowledged: boolean;
}

/** Creates the interaction half of the fake. */
export function createFakeInteractions(dependencies: FakeInteractionDependencies): FakeInteractions {
  const { world } = dependencies;
  const issued = new Map<string, Issued>();
  const callbackRecords: FakeInteractionCallback[] = [];

  function press(input: FakePressInput): Record<string, unknown> {
    const messageId = typeof input.message === "string" ? input.message : String(input.message.id);
    const message = dependencies.message(messageId);
    if (message === undefined) throw new Error(`fake discord: no message ${messageId} to press a button on`);
    const channel = dependencies.channel(String(message.channel_id));
    if (channel === undefined) throw new Error(`fake discord: message ${messageId} is in an unknown channel`);
    const author = input.author ?? world.user;
    if (channel.type === "dm" && channel.recipient.id !== author.id) {
      throw new Error(
        `fake discord: ${author.username} cannot see the DM with ${channel.recipient.username}`,
      );
    }
    if (!isRecord(message.author) || message.author.id !== world.ids.bot) {
      throw new Error("fake discord: only the bot's own buttons send it interactions");
    }
    const button = findButton(message.components, input);
    if (button === undefined) {
      const which = input.customId ?? input.label ?? "(no customId or label given)";
      throw new Error(`fake discord: message ${messageId} has no button ${which} (any more)`);
    }
    if (button.custom_id === undefined)
      throw new Error("fake discord: a link button opens its URL, no interaction");
    if (button.disabled === true) throw new Error(`fake discord: button ${button.custom_id} is disabled`);
    const interaction: Issued = {
      id: dependencies.nextId(),
      token: `aW50ZXJhY3Rpb246${randomBytes(48).toString("base64url")}`,
      messageId,
      createdAt: dependencies.clock(),
      acknowledged: false,
    };
    issued.set(interaction.id, interaction);
    const inGuild = channel.type !== "dm";
    const guildId = world.ids.guild;
    return {
      id: interaction.id,
      application_id: world.ids.application,
      type: MESSAGE_COMPONENT,
      token: interaction.token,
      version: 1,
      data: {
        custom_id: button.custom_id,
        component_type: 2,
        ...(button.id === undefined ? {} : { id: button.id }),
      },
      channel: channelPayload(channel, world),
      channel_id: channel.id,
      ...(inGuild
        ? {
            guild: { id: guildId, locale: "en-US", features: [] },
            guild_id: guildId,
            guild_locale: "en-US",
            member: {
              ...memberPayload(),
              user: userPayload(author),
              permissions: MEMBER_PERMISSIONS,
              pending: false,
              premium_since: null,
              communication_disabled_until: null,
              avatar: null,
            },
          }
        : { user: userPayload(author) }),
      message,
      app_permissions: MEMBER_PERMISSIONS,
      locale: "en-US",
      entitlements: [],
      entitlement_sku_ids: [],
      authorizing_integration_owners: { "0": inGuild ? guildId : "0" },
      context: inGuild ? InteractionContext.Guild : InteractionContext.BotDm,
      attachment_size_limit: 10_485_760,
    };
  }

  function callback(id: string, token: string, body: unknown, withResponse: boolean): FakeRestReply {
    const interaction = issued.get(id);
    const now = dependencies.clock();
    if (interaction === undefined || now - interaction.createdAt > dependencies.acknowledgeWithinMs) {
      return { status: 404, body: { message: "Unknown interaction", code: 10062 } };
    }
    if (interaction.token !== token) {
      return { status: 401, body: { message: "Invalid Webhook Token", code: 50027 } };
    }
    if (interaction.acknowledged) {
      return { status: 400, body: { message: "Interaction has already been acknowledged.", code: 40060 } };
    }
    const parsed = interactionCallbackBodySchema.safeParse(body);
    if (!parsed.success) return { status: 400, body: invalidFormBodyFrom(parsed.error) };
    const { type, data } = parsed.data;
    if (type !== InteractionResponse.DeferredUpdateMessage && type !== InteractionResponse.UpdateMessage) {
      return {
        status: 400,
        body: {
          message: `fake discord: interaction response type ${type} is not supported (only 6 and 7)`,
          code: 50035,
        },
      };
    }
    interaction.acknowledged = true;
    let message = dependencies.message(interaction.messageId);
    if (type === InteractionResponse.UpdateMessage && message !== undefined && data !== undefined) {
      message = {
        ...message,
        ...(data.content === undefined ? {} : { content: data.content }),
        ...(data.components === undefined ? {} : { components: withComponentIds(data.components) }),
        edited_timestamp: new Date(now).toISOString(),
      };
      dependencies.updated(message);
    }
    callbackRecords.push({
      interactionId: id,
      type,
      ...(data === undefined ? {} : { data }),
      delayMs: now - interaction.createdAt,
      at: now,
    });
    if (!withResponse) return { status: 204 };
    return {
      status: 200,
      body: {
        interaction: {
          id,
          type: MESSAGE_COMPONENT,
          activity_instance_id: null,
          response_message_id: interaction.messageId,
          response_message_loading: false,
          response_message_ephemeral: false,
        },
        resource: { type, ...(message === undefined ? {} : { message }) },
      },
    };
  }

  return { press, callback, callbacks: () => [...callbackRecords] };
}

function findButton(components: unknown, input: FakePressInput): FakeButton | undefined {
  if (input.customId === undefined && input.label === undefined) return undefined;
  const rows = componentsSchema.safeParse(components);
  if (!rows.success) return undefined;
  return rows.data
    .flatMap((row) => row.components)
    .find((button) =>
      input.customId !== undefined ? button.custom_id === input.customId : button.label === input.label,
    );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}
