import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { type FakeDiscord, startFakeDiscord } from "./fake-discord.js";
import { MESSAGE_CONTENT_INTENT } from "./fake-discord-schemas.js";
import { waitUntil } from "./wait-until.js";

/** A raw gateway client that records every frame, so the protocol itself is asserted. */
interface RawGatewayClient {
  readonly frames: { op: number; t?: string; s?: number; d?: unknown }[];
  readonly closed: () => number | undefined;
  send(payload: unknown): void;
  frame(
    match: (frame: RawGatewayClient["frames"][number]) => boolean,
  ): Promise<RawGatewayClient["frames"][number]>;
  close(): void;
}

let fake: FakeDiscord;
const clients: RawGatewayClient[] = [];

beforeEach(async () => {
  fake = await startFakeDiscord({ heartbeatIntervalMs: 250 });
});
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await fake.close();
});

async function connect(): Promise<RawGatewayClient> {
  const socket = new WebSocket(`${fake.gatewayUrl}?v=10&encoding=json`);
  const frames: RawGatewayClient["frames"] = [];
  let closeCode: number | undefined;
  socket.on("message", (data) => frames.push(JSON.parse(String(data))));
  socket.on("close", (code) => {
    closeCode = code;
  });
  await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
  const client: RawGatewayClient = {
    frames,
    closed: () => closeCode,
    send: (payload) => socket.send(JSON.stringify(payload)),
    frame: (match) => waitUntil(() => frames.find(match), { what: "a gateway frame" }),
    close: () => socket.terminate(),
  };
  clients.push(client);
  return client;
}

const identify = (token = fake.token(), intents = 1 | (1 << 9) | (1 << 12) | MESSAGE_CONTENT_INTENT) => ({
  op: 2,
  d: { token, intents, properties: { os: "linux", browser: "test", device: "test" } },
});

const post = (path: string, body: unknown, token = fake.token()) =>
  fetch(`${fake.apiUrl}/v10${path}`, {
    method: "POST",
    headers: { authorization: `Bot ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("fake Discord REST", () => {
  it("tells the client where the gateway is and refuses a wrong token with 401", async () => {
    const ok = await fetch(`${fake.apiUrl}/v10/gateway/bot`, {
      headers: { authorization: `Bot ${fake.token()}` },
    });
    expect(await ok.json()).toMatchObject({ url: fake.gatewayUrl, shards: 1 });
    const refused = await fetch(`${fake.apiUrl}/v10/gateway/bot`, { headers: { authorization: "Bot nope" } });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ message: "401: Unauthorized", code: 0 });
  });

  it("accepts 2000 characters as a full JSON message object and rejects 2001 with 50035", async () => {
    const channel = fake.world.ids.channel;
    const accepted = await post(`/channels/${channel}/messages`, { content: "a".repeat(2000) });
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get("content-type")).toBe("application/json");
    expect(await accepted.json()).toMatchObject({ channel_id: channel, author: { id: fake.world.ids.bot } });
    const rejected = await post(`/channels/${channel}/messages`, { content: "a".repeat(2001) });
    expect(rejected.status).toBe(400);
    expect(await rejected.json()).toMatchObject({ code: 50035, errors: { content: expect.anything() } });
    expect(fake.sent().map((message) => message.content.length)).toEqual([2000]);
  });

  it("rejects replies to unknown messages or to messages of another channel", async () => {
    const { ids } = fake.world;
    const unknown = await post(`/channels/${ids.channel}/messages`, {
      content: "hi",
      message_reference: { message_id: "123" },
    });
    expect(unknown.status).toBe(400);
    const lenient = await post(`/channels/${ids.channel}/messages`, {
      content: "hi",
      message_reference: { message_id: "123", fail_if_not_exists: false },
    });
    expect(lenient.status).toBe(200);
    const inThread = fake.dispatchMessage({ where: "thread", content: "hello" });
    const elsewhere = await post(`/channels/${ids.channel}/messages`, {
      content: "hi",
      message_reference: { message_id: inThread.d.id },
    });
    expect(elsewhere.status).toBe(400);
    expect(await elsewhere.json()).toMatchObject({ errors: { message_reference: expect.anything() } });
  });

  it("answers the next matching request with 429, Retry-After and Discord's body, then serves normally", async () => {
    fake.rateLimitNext("POST /channels/:id/messages", 0.25);
    const channel = fake.world.ids.channel;
    const limited = await post(`/channels/${channel}/messages`, { content: "one" });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("0.25");
    expect(await limited.json()).toEqual({
      message: "You are being rate limited.",
      retry_after: 0.25,
      global: false,
    });
    expect((await post(`/channels/${channel}/messages`, { content: "two" })).status).toBe(200);
    expect(fake.rateLimits()).toHaveLength(1);
    expect(fake.sent().map((message) => message.content)).toEqual(["two"]);
  });
});

describe("fake Discord gateway", () => {
  it("says HELLO, acknowledges heartbeats and answers IDENTIFY with READY then GUILD_CREATE", async () => {
    const client = await connect();
    expect(await client.frame((frame) => frame.op === 10)).toEqual({
      op: 10,
      d: { heartbeat_interval: 250 },
    });
    client.send({ op: 1, d: null });
    await client.frame((frame) => frame.op === 11);
    client.send(identify());
    const ready = await client.frame((frame) => frame.t === "READY");
    expect(ready).toMatchObject({ op: 0, s: 1, d: { application: { id: fake.world.ids.application } } });
    const guild = await client.frame((frame) => frame.t === "GUILD_CREATE");
    expect(guild.s).toBe(2);
    expect(guild.d).toMatchObject({
      channels: [{ id: fake.world.ids.channel }],
      threads: [{ id: fake.world.ids.thread }],
    });
    fake.dispatchMessage({ where: "channel", content: "hi", mention: "user" });
    const message = await client.frame((frame) => frame.t === "MESSAGE_CREATE");
    expect(message).toMatchObject({
      s: 3,
      d: { content: `<@${fake.world.ids.bot}> hi`, guild_id: fake.world.ids.guild },
    });
    expect(fake.identifies()).toBe(1);
  });

  it("closes with 4004 on a wrong token and 4014 when MESSAGE_CONTENT is not enabled", async () => {
    const wrong = await connect();
    wrong.send(identify("wrong-token"));
    await waitUntil(() => wrong.closed() === 4004);
    await fake.close();
    fake = await startFakeDiscord({ privilegedIntents: false });
    const disallowed = await connect();
    disallowed.send(identify());
    await waitUntil(() => disallowed.closed() === 4014);
    expect(fake.identifies()).toBe(0);
  });

  it("replays events missed while disconnected on RESUME, then sends RESUMED", async () => {
    const first = await connect();
    first.send(identify());
    const ready = await first.frame((frame) => frame.t === "READY");
    const sessionId = (ready.d as { session_id: string }).session_id;
    fake.dropConnection(4000);
    await waitUntil(() => first.closed() === 4000);
    fake.dispatchMessage({ where: "dm", content: "while you were away" });
    const second = await connect();
    second.send({ op: 6, d: { token: fake.token(), session_id: sessionId, seq: 2 } });
    const replayed = await second.frame((frame) => frame.t === "MESSAGE_CREATE");
    expect(replayed).toMatchObject({ s: 3, d: { content: "while you were away" } });
    expect(await second.frame((frame) => frame.t === "RESUMED")).toMatchObject({ s: 4 });
    expect(fake.resumes()).toBe(1);
  });

  it("answers a RESUME with op 9 when told to invalidate, and for an unknown session", async () => {
    const client = await connect();
    fake.invalidateNextResume();
    client.send({ op: 6, d: { token: fake.token(), session_id: "nope", seq: 1 } });
    expect(await client.frame((frame) => frame.op === 9)).toEqual({ op: 9, d: false });
    expect(fake.resumes()).toBe(0);
  });

  it("echoes the bot's own post as MESSAGE_CREATE, as Discord does", async () => {
    const client = await connect();
    client.send(identify());
    await client.frame((frame) => frame.t === "GUILD_CREATE");
    await post(`/channels/${fake.world.ids.channel}/messages`, { content: "mine" });
    const echo = await client.frame((frame) => frame.t === "MESSAGE_CREATE");
    expect(echo.d).toMatchObject({ content: "mine", author: { id: fake.world.ids.bot, bot: true } });
  });
});

describe("fake Discord buttons and interactions", () => {
  const approve = { type: 2, style: 1, label: "Approve", custom_id: "almanac:approve K7QD" };
  const deny = { type: 2, style: 4, label: "Deny", custom_id: "almanac:deny K7QD" };
  const callback = (id: string, token: string, body: unknown, query = "") =>
    fetch(`${fake.apiUrl}/v10/interactions/${id}/${token}/callback${query}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  async function postButtons(channelId: string): Promise<Record<string, unknown>> {
    const response = await post(`/channels/${channelId}/messages`, {
      content: "Approve?",
      components: [{ type: 1, components: [approve, deny] }],
    });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  }

  it("records the buttons of a posted message and numbers its components like Discord", async () => {
    const message = await postButtons(fake.world.ids.channel);
    expect(fake.sent()[0]?.components).toEqual([{ type: 1, components: [approve, deny] }]);
    expect(message.components).toEqual([
      {
        type: 1,
        id: 1,
        components: [
          { ...approve, id: 2 },
          { ...deny, id: 3 },
        ],
      },
    ]);
  });

  it("refuses what Discord refuses: a custom_id over 100, six in a row, a duplicate id, no custom_id", async () => {
    const channel = fake.world.ids.channel;
    const send = (components: unknown) => post(`/channels/${channel}/messages`, { content: "x", components });
    const tooLong = await send([{ type: 1, components: [{ ...approve, custom_id: "a".repeat(101) }] }]);
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({
      code: 50035,
      errors: {
        components: {
          0: { components: { 0: { custom_id: { _errors: [{ code: "BASE_TYPE_BAD_LENGTH" }] } } } },
        },
      },
    });
    const six = Array.from({ length: 6 }, (_, index) => ({ ...approve, custom_id: `b${index}` }));
    expect((await send([{ type: 1, components: six }])).status).toBe(400);
    expect(
      (await send([{ type: 1, components: [approve, { ...deny, custom_id: approve.custom_id }] }])).status,
    ).toBe(400);
    expect((await send([{ type: 1, components: [{ type: 2, style: 1, label: "x" }] }])).status).toBe(400);
    expect(fake.sent()).toEqual([]);
    const buttonsOnly = await post(`/channels/${channel}/messages`, {
      content: "",
      components: [{ type: 1, components: [approve] }],
    });
    expect(buttonsOnly.status).toBe(200);
  });

  it("dispatches a press over the gateway as INTERACTION_CREATE, shaped as in a guild", async () => {
    const client = await connect();
    client.send(identify());
    await client.frame((frame) => frame.t === "GUILD_CREATE");
    const message = await postButtons(fake.world.ids.channel);
    const stranger = { id: "1600000000000000099", username: "mallory" };
    fake.pressButton({ message, label: "Deny", author: stranger });
    const frame = await client.frame((candidate) => candidate.t === "INTERACTION_CREATE");
    expect(frame.d).toMatchObject({
      type: 3,
      application_id: fake.world.ids.application,
      token: expect.any(String),
      version: 1,
      data: { custom_id: deny.custom_id, component_type: 2, id: 3 },
      channel_id: fake.world.ids.channel,
      channel: { id: fake.world.ids.channel, type: 0 },
      guild_id: fake.world.ids.guild,
      member: { user: { id: stranger.id, username: "mallory" }, permissions: expect.any(String) },
      message: { id: message.id, components: message.components },
      entitlements: [],
      context: 0,
    });
    expect(frame.d).not.toHaveProperty("user");
  });

  it("lets only the person a DM is with press its buttons, and names them as `user`", async () => {
    const response = await post(`/channels/${fake.world.ids.dmChannel}/messages`, {
      content: "Approve?",
      components: [{ type: 1, components: [approve] }],
    });
    const message = (await response.json()) as Record<string, unknown>;
    expect(() =>
      fake.pressButton({ message, label: "Approve", author: { id: "1600000000000000099", username: "m" } }),
    ).toThrow(/cannot see the DM/);
    const event = fake.pressButton({ message, label: "Approve" });
    expect(event.d).toMatchObject({ user: { id: fake.world.user.id }, context: 1 });
    expect(event.d).not.toHaveProperty("member");
    expect(() => fake.pressButton({ message, label: "Nope" })).toThrow(/no button Nope/);
  });

  it("acknowledges once with the interaction token (no bot token), and UPDATE_MESSAGE edits the message", async () => {
    const client = await connect();
    client.send(identify());
    await client.frame((frame) => frame.t === "GUILD_CREATE");
    const message = await postButtons(fake.world.ids.channel);
    const { d } = fake.pressButton({ message, label: "Approve" });
    const id = String(d.id);
    const token = String(d.token);
    expect((await callback(id, "wrong-token", { type: 6 })).status).toBe(401);
    expect((await callback(id, token, { type: 1 })).status).toBe(400);
    const accepted = await callback(id, token, { type: 7, data: { components: [] } });
    expect(accepted.status).toBe(204);
    const again = await callback(id, token, { type: 6 });
    expect(again.status).toBe(400);
    expect(await again.json()).toEqual({
      message: "Interaction has already been acknowledged.",
      code: 40060,
    });
    expect(fake.interactionCallbacks()).toMatchObject([
      { interactionId: id, type: 7, data: { components: [] } },
    ]);
    expect(fake.message(String(message.id))).toMatchObject({ content: "Approve?", components: [] });
    const update = await client.frame((frame) => frame.t === "MESSAGE_UPDATE");
    expect(update.d).toMatchObject({ id: message.id, components: [], edited_timestamp: expect.any(String) });
    expect(() => fake.pressButton({ message, label: "Approve" })).toThrow(/no button/);
  });

  it("answers Unknown interaction once Discord's 3-second window has passed", async () => {
    await fake.close();
    let now = 1_700_000_000_000;
    fake = await startFakeDiscord({ clock: () => now });
    const message = await postButtons(fake.world.ids.channel);
    const { d } = fake.pressButton({ message, label: "Approve" });
    now += 3001;
    const late = await callback(String(d.id), String(d.token), { type: 6 }, "?with_response=false");
    expect(late.status).toBe(404);
    expect(await late.json()).toEqual({ message: "Unknown interaction", code: 10062 });
    expect(fake.interactionCallbacks()).toEqual([]);
  });
});
