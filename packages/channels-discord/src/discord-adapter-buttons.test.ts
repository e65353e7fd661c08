import { formatSessionKey, type InboundMessage, type MessageButton } from "@almanac/core";
import { type FakeDiscordUser, waitUntil } from "@almanac/testkit/discord";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AdapterHarness, createAdapterHarness } from "../test/adapter-harness.js";

let harness: AdapterHarness;

beforeEach(async () => {
  harness = await createAdapterHarness();
  await harness.start();
});
afterEach(async () => {
  await harness.close();
});

const APPROVAL_BUTTONS: readonly MessageButton[] = [
  { label: "Approve", reply: "approve K7QD", style: "primary" },
  { label: "Deny", reply: "deny K7QD", style: "danger" },
];

const stranger: FakeDiscordUser = { id: "1600000000000000099", username: "mallory", globalName: "Mallory" };

/** A message typed in `where`, as the adapter delivered it. */
async function said(where: "dm" | "channel" | "thread", content: string): Promise<InboundMessage> {
  const event = harness.fake.dispatchMessage({
    where,
    content,
    ...(where === "dm" ? {} : { mention: "user" }),
  });
  return harness.received((message) => message.id === event.d.id, content);
}

/** Asks the approval question in the conversation of `question`, and returns the posted message object. */
async function ask(question: InboundMessage, text = "Approval needed (K7QD): run `get-sum`?") {
  await harness.adapter.send({
    sessionKey: question.sessionKey,
    text,
    inReplyTo: question,
    buttons: APPROVAL_BUTTONS,
  });
  const posted = harness.fake.sent().at(-1);
  if (posted === undefined) throw new Error("nothing was posted");
  return posted.message;
}

describe("buttons under a message", () => {
  it("puts the buttons as one action row under the last part of a long message only", async () => {
    const question = await said("channel", "long question please");
    const text = Array.from({ length: 500 }, (_, index) => `word${index}`).join(" ");
    expect(text.length).toBeGreaterThan(2000);
    await harness.adapter.send({ sessionKey: question.sessionKey, text, buttons: APPROVAL_BUTTONS });
    const sent = harness.fake.sent();
    expect(sent.length).toBeGreaterThan(1);
    expect(sent.slice(0, -1).every((message) => message.components === undefined)).toBe(true);
    expect(sent.at(-1)?.components).toEqual([
      {
        type: 1,
        components: [
          { type: 2, style: 1, label: "Approve", custom_id: "almanac:approve K7QD" },
          { type: 2, style: 4, label: "Deny", custom_id: "almanac:deny K7QD" },
        ],
      },
    ]);
  });

  it("sends no components when there are no buttons", async () => {
    const question = await said("dm", "hello");
    await harness.adapter.send({ sessionKey: question.sessionKey, text: "hi", inReplyTo: question });
    expect(harness.fake.sent()[0]?.components).toBeUndefined();
  });
});

describe("pressing a button", () => {
  it("arrives from the person who pressed it in a guild channel, in the session of typing there", async () => {
    const { fake } = harness;
    const question = await said("channel", "add 20 and 22");
    const message = await ask(question);
    const event = fake.pressButton({ message, label: "Approve", author: stranger });
    const press = await harness.received((inbound) => inbound.id === event.d.id, "the press");
    expect(press).toMatchObject({
      sessionKey: formatSessionKey({
        channel: "discord",
        account: "default",
        kind: "group",
        id: fake.world.ids.channel,
      }),
      channel: "discord",
      account: "default",
      conversation: { kind: "group", id: fake.world.ids.channel, name: "general" },
      sender: { id: stranger.id, name: "Mallory" },
      mentioned: true,
      text: "approve K7QD",
      replyTo: message.id,
    });
    // The payload is kept, without the interaction token (a credential while the interaction lives).
    const { token, ...withoutToken } = event.d;
    expect(token).toEqual(expect.any(String));
    expect(press.raw).toEqual(withoutToken);
    expect(press.sessionKey).toBe(question.sessionKey);
    expect(harness.logs).toEqual([]);
  });

  it("acknowledges a guild press at once and leaves the buttons for whoever they are for", async () => {
    const { fake } = harness;
    const message = await ask(await said("channel", "add 20 and 22"));
    const event = fake.pressButton({ message, customId: "almanac:deny K7QD", author: stranger });
    const [callback] = await waitUntil(() => nonEmpty(fake.interactionCallbacks()), { what: "the callback" });
    expect(callback).toMatchObject({ interactionId: event.d.id, type: 6 });
    expect(callback?.delayMs).toBeLessThan(3000);
    // Someone else can still press: a stranger's press does not take the owner's buttons away.
    const second = fake.pressButton({ message, label: "Approve" });
    await harness.received((inbound) => inbound.id === second.d.id, "the owner's press");
    expect(harness.inbound.map((inbound) => inbound.text)).toEqual([
      "add 20 and 22",
      "deny K7QD",
      "approve K7QD",
    ]);
  });

  it("removes the buttons after a press in a DM, so it cannot be pressed twice", async () => {
    const { fake } = harness;
    const question = await said("dm", "add 20 and 22");
    const message = await ask(question);
    const event = fake.pressButton({ message, label: "Approve" });
    const press = await harness.received((inbound) => inbound.id === event.d.id, "the press");
    expect(press).toMatchObject({
      sessionKey: question.sessionKey,
      conversation: { kind: "dm", id: fake.world.ids.dmChannel },
      sender: { id: fake.world.user.id },
      text: "approve K7QD",
    });
    const [callback] = await waitUntil(() => nonEmpty(fake.interactionCallbacks()), { what: "the callback" });
    expect(callback).toMatchObject({ interactionId: event.d.id, type: 7, data: { components: [] } });
    expect(fake.message(String(message.id))).toMatchObject({ content: message.content, components: [] });
    expect(() => fake.pressButton({ message, label: "Deny" })).toThrow(/no button/);
    expect(harness.logs).toEqual([]);
  });

  it("answers a press as a reply to the message the button was on", async () => {
    const { fake, adapter } = harness;
    const message = await ask(await said("thread", "add 20 and 22"));
    const event = fake.pressButton({ message, label: "Approve" });
    const press = await harness.received((inbound) => inbound.id === event.d.id, "the press");
    await adapter.send({ sessionKey: press.sessionKey, text: "Approved K7QD.", inReplyTo: press });
    expect(fake.sent().at(-1)).toMatchObject({
      channelId: fake.world.ids.thread,
      content: "Approved K7QD.",
      messageReference: { message_id: message.id },
    });
  });

  it("logs an acknowledgement Discord refused, without throwing, and still delivers the press", async () => {
    const { fake } = harness;
    const message = await ask(await said("channel", "add 20 and 22"));
    fake.failNext("POST /interactions/:id/:token/callback", 400);
    const event = fake.pressButton({ message, label: "Approve" });
    await harness.received((inbound) => inbound.id === event.d.id, "the press");
    const warning = await waitUntil(
      () => harness.logs.find((entry) => entry.message === "discord button press not acknowledged"),
      { what: "the warning" },
    );
    expect(warning).toMatchObject({ level: "warn", fields: { interactionId: event.d.id } });
    expect(fake.interactionCallbacks()).toEqual([]);
  });

  it("ignores presses of buttons it did not make (no acknowledgement, no message)", async () => {
    const { fake } = harness;
    const response = await fetch(`${fake.apiUrl}/v10/channels/${fake.world.ids.channel}/messages`, {
      method: "POST",
      headers: { authorization: `Bot ${fake.token()}`, "content-type": "application/json" },
      body: JSON.stringify({
        content: "A poll",
        components: [{ type: 1, components: [{ type: 2, style: 2, label: "Yes", custom_id: "poll:yes" }] }],
      }),
    });
    const message = (await response.json()) as Record<string, unknown>;
    const event = fake.pressButton({ message, label: "Yes" });
    const sentinel = await said("dm", "sentinel");
    expect(harness.inbound.map((inbound) => inbound.id)).toEqual([sentinel.id]);
    expect(harness.inbound.some((inbound) => inbound.id === event.d.id)).toBe(false);
    expect(fake.interactionCallbacks()).toEqual([]);
    expect(fake.requests().some((request) => request.path.startsWith("/interactions/"))).toBe(false);
  });
});

function nonEmpty<T>(items: readonly T[]): readonly T[] | undefined {
  return items.length > 0 ? items : undefined;
}
