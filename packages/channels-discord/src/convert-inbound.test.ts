import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  type InboundContext,
  parseMessageCreate,
  toInboundMessage,
  toInboundPress,
} from "./convert-inbound.js";
import { parseInteraction } from "./discord-interaction-schema.js";
import type { DiscordMessagePayload } from "./discord-message-schema.js";

// Fixtures follow Discord API v10 MESSAGE_CREATE / INTERACTION_CREATE payloads field for field (ids and names
// replaced).
const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`./__fixtures__/${name}.json`, import.meta.url), "utf8"));

const BOT = "1182744960217088061";
const GUILD_CHANNEL = "1182745113418235965";
const context = (overrides: Partial<InboundContext> = {}): InboundContext => ({
  account: "main",
  botUserId: BOT,
  botRoleIds: new Set(["1182746079706181656"]),
  location: { kind: "group", name: "deploys" },
  receivedAt: 1_700_000_000_000,
  ...overrides,
});

function parsed(data: unknown): DiscordMessagePayload {
  const result = parseMessageCreate(data);
  if (!result.ok) throw new Error(result.error);
  return result.message;
}

describe("toInboundMessage", () => {
  it("normalizes a guild reply to the bot: mention stripped, other mentions named, reply id kept", () => {
    const raw = fixture("message-create-guild-reply");
    const message = toInboundMessage(parsed(raw), raw, context());
    expect(message).toEqual({
      sessionKey: `discord:main:group:${GUILD_CHANNEL}`,
      channel: "discord",
      id: "1350033100749635635",
      account: "main",
      conversation: { kind: "group", id: GUILD_CHANNEL, name: "deploys" },
      sender: { id: "277462112618020864", name: "Ally" },
      mentioned: true,
      text: "can @Bobby move it to Friday?",
      replyTo: "1350031417286053918",
      receivedAt: 1_700_000_000_000,
      raw,
    });
  });

  it("treats a reply to the bot's post as a mention even when the reply does not ping", () => {
    const payload = parsed(fixture("message-create-guild-reply"));
    const quiet = { ...payload, content: "can we move it?", mentions: [] };
    expect(toInboundMessage(quiet, quiet, context())?.mentioned).toBe(true);
    const elsewhere = {
      ...quiet,
      referenced_message: { id: "1", author: { id: "42", username: "someone" } },
    };
    expect(toInboundMessage(elsewhere, elsewhere, context())?.mentioned).toBe(false);
  });

  it("counts a mention of the bot's managed role and strips it", () => {
    const payload = parsed(fixture("message-create-guild-reply"));
    const byRole = {
      ...payload,
      content: "<@&1182746079706181656> status?",
      mentions: [],
      mention_roles: ["1182746079706181656"],
      referenced_message: null,
      message_reference: undefined,
      type: 0,
    };
    expect(toInboundMessage(byRole, byRole, context())).toMatchObject({ mentioned: true, text: "status?" });
    expect(toInboundMessage(byRole, byRole, context({ botRoleIds: new Set() }))).toMatchObject({
      mentioned: false,
      text: "<@&1182746079706181656> status?",
    });
  });

  it("puts a thread message in a group session under its parent, with the thread as conversation", () => {
    const payload = parsed(fixture("message-create-guild-reply"));
    const inThread = { ...payload, channel_id: "1350036568917753917" };
    const message = toInboundMessage(
      inThread,
      inThread,
      context({ location: { kind: "thread", parentId: GUILD_CHANNEL, name: "deploy-questions" } }),
    );
    expect(message?.sessionKey).toBe(`discord:main:group:${GUILD_CHANNEL}:1350036568917753917`);
    expect(message?.conversation).toEqual({
      kind: "thread",
      id: "1350036568917753917",
      parentId: GUILD_CHANNEL,
      name: "deploy-questions",
    });
  });

  it("files a DM under the user, replies to the DM channel, and lists every attachment with its kind", () => {
    const raw = fixture("message-create-dm-attachments");
    const message = toInboundMessage(parsed(raw), raw, context({ location: { kind: "dm" } }));
    expect(message).toMatchObject({
      sessionKey: "discord:main:dm:277462112618020864",
      conversation: { kind: "dm", id: "1182750123456790528" },
      sender: { id: "277462112618020864", name: "Alice" },
      mentioned: true,
      text: "",
      attachments: [
        {
          kind: "image",
          name: "whiteboard.jpg",
          id: "1350034144102907924",
          url: expect.stringContaining("/whiteboard.jpg?"),
          contentType: "image/jpeg",
          size: 184211,
        },
        {
          kind: "audio",
          name: "standup.ogg",
          id: "1350034144413290617",
          url: expect.stringContaining("standup.ogg"),
        },
        {
          kind: "file",
          name: "notes.txt",
          id: "1350034144769810452",
          url: expect.stringContaining("notes.txt"),
          contentType: "text/plain",
        },
      ],
    });
    expect(message?.images).toBeUndefined();
  });

  it("drops system messages, the bot's own posts, other bots, webhooks and empty unaddressed messages", () => {
    const system = fixture("message-create-thread-created");
    expect(toInboundMessage(parsed(system), system, context())).toBeUndefined();
    const payload = parsed(fixture("message-create-guild-reply"));
    const variants: DiscordMessagePayload[] = [
      { ...payload, author: { id: BOT, username: "almanac", bot: true } },
      { ...payload, author: { id: "55", username: "ci-bot", bot: true } },
      { ...payload, webhook_id: "66" },
      { ...payload, content: "", mentions: [], referenced_message: null, attachments: [] },
    ];
    for (const variant of variants) expect(toInboundMessage(variant, variant, context())).toBeUndefined();
    const bareMention = { ...payload, content: `<@${BOT}>  `, attachments: [] };
    expect(toInboundMessage(bareMention, bareMention, context())).toMatchObject({
      mentioned: true,
      text: "",
    });
  });

  it("rejects a payload that is not a message instead of guessing", () => {
    expect(parseMessageCreate({ id: "1", content: "hi" }).ok).toBe(false);
    expect(parseMessageCreate("MESSAGE_CREATE").ok).toBe(false);
  });
});

describe("toInboundPress", () => {
  const press = (raw: unknown) => {
    const result = parseInteraction(raw);
    if (result.kind !== "press") throw new Error(`not a press: ${JSON.stringify(result)}`);
    expect(result.raw).not.toHaveProperty("token");
    return result.press;
  };

  it("turns a press in a guild channel into the member's message there, with the button's reply as text", () => {
    const raw = fixture("interaction-create-button-guild");
    const pressed = toInboundPress(press(raw), raw, context());
    const typed = toInboundMessage(parsed(fixture("message-create-guild-reply")), {}, context());
    expect(pressed).toEqual({
      sessionKey: `discord:main:group:${GUILD_CHANNEL}`,
      channel: "discord",
      id: "1350034301852418089",
      account: "main",
      conversation: { kind: "group", id: GUILD_CHANNEL, name: "deploys" },
      sender: { id: "277462112618020864", name: "Ally" },
      mentioned: true,
      text: "approve K7QD",
      replyTo: "1350034145029857300",
      receivedAt: 1_700_000_000_000,
      raw,
    });
    // The same person typing in the same channel lands in the same session, under the same conversation.
    expect(typed?.sessionKey).toBe(pressed.sessionKey);
    expect(typed?.conversation).toEqual(pressed.conversation);
  });

  it("turns a press in a DM into the user's DM message, keyed by the user like typed DMs", () => {
    const raw = fixture("interaction-create-button-dm");
    const pressed = toInboundPress(press(raw), raw, context({ location: { kind: "dm" } }));
    const typed = fixture("message-create-dm-attachments");
    expect(pressed).toMatchObject({
      sessionKey: "discord:main:dm:277462112618020864",
      conversation: { kind: "dm", id: "1182750123456790528" },
      sender: { id: "277462112618020864", name: "Alice" },
      mentioned: true,
      text: "deny K7QD",
    });
    expect(toInboundMessage(parsed(typed), typed, context({ location: { kind: "dm" } }))?.sessionKey).toBe(
      pressed.sessionKey,
    );
  });

  it("files a press in a thread under the parent channel, like a message in that thread", () => {
    const raw = fixture("interaction-create-button-guild");
    const location = { kind: "thread", parentId: "10", name: "t" } as const;
    expect(toInboundPress(press(raw), raw, context({ location }))).toMatchObject({
      sessionKey: `discord:main:group:10:${GUILD_CHANNEL}`,
      conversation: { kind: "thread", id: GUILD_CHANNEL, parentId: "10" },
    });
  });
});

describe("parseInteraction", () => {
  const guild = fixture("interaction-create-button-guild") as Record<string, unknown>;

  it("ignores interactions that are not presses of the adapter's buttons", () => {
    const slashCommand = { ...guild, type: 2, data: { id: "1", name: "ping", type: 1 } };
    const foreignButton = { ...guild, data: { component_type: 2, custom_id: "poll:yes" } };
    const selectMenu = { ...guild, data: { component_type: 3, custom_id: "almanac:x", values: ["a"] } };
    for (const payload of [slashCommand, foreignButton, selectMenu, "INTERACTION_CREATE", null]) {
      expect(parseInteraction(payload)).toEqual({ kind: "ignored" });
    }
  });

  it("refuses a press of its button that names nobody who pressed it, instead of guessing", () => {
    const { member: _member, ...anonymous } = guild;
    expect(parseInteraction(anonymous)).toMatchObject({
      kind: "invalid",
      error: expect.stringContaining("who"),
    });
  });
});
