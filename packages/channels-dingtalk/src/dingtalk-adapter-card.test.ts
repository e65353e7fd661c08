import { canStreamReplies, type InboundMessage, type ReplyStream } from "@almanac/core";
import { type CardRecord, type FakeDingTalk, waitUntil } from "@almanac/testkit/dingtalk";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Harness, type HarnessOptions, startHarness } from "../test/adapter-harness.js";
import { createManualClock, type ManualClock } from "../test/manual-clock.js";
import { CARD_UPDATE_INTERVAL_MS, CARD_WRITE_ENDED } from "./card-reply-stream.js";
import { DINGTALK_MARKDOWN_LIMIT } from "./convert-outbound.js";

let harness: Harness | undefined;

beforeEach(() => {
  // dingtalk-stream prints "connect success" / "Disconnecting." with console.info itself.
  vi.spyOn(console, "info").mockImplementation(() => {});
});

afterEach(async () => {
  await harness?.close();
  harness = undefined;
  vi.restoreAllMocks();
});

interface CardSetup {
  readonly harness: Harness;
  readonly fake: FakeDingTalk;
  readonly clock: ManualClock;
  readonly inbound: InboundMessage;
  readonly stream: ReplyStream;
}

/** An adapter with the fake's card template (or `template`) on a manual clock, and a reply stream to one message. */
async function startCardStream(
  options: { readonly template?: string; readonly conversation?: "single" | "group" } & HarnessOptions = {},
): Promise<CardSetup> {
  const clock = createManualClock();
  harness = await startHarness({
    ...options,
    settings: { cardTemplateId: options.template ?? "fake-ai-card-template.schema", ...options.settings },
    adapter: { clock, ...options.adapter },
  });
  const { fake, adapter } = harness;
  fake.sendRobotMessage({ conversation: options.conversation ?? "single", text: "write me a poem" });
  const inbound = await harness.nextInbound(1);
  if (!canStreamReplies(adapter)) throw new Error("a card template is configured: the adapter must stream");
  const stream = adapter.startReplyStream({ sessionKey: inbound.sessionKey, text: "", inReplyTo: inbound });
  return { harness, fake, clock, inbound, stream };
}

const onlyCard = (fake: FakeDingTalk): CardRecord => {
  const cards = fake.cards();
  expect(cards).toHaveLength(1);
  return cards[0]!;
};
const writes = (fake: FakeDingTalk): number => fake.cards()[0]?.updates.length ?? 0;

/**
 * Waits until the adapter has dealt with `count` card writes (not only the fake seen them): the interval runs from
 * the end of a write, so the clock may move only after that.
 */
const writesEnded = (setup: { readonly harness: Harness }, count: number) =>
  waitUntil(() => setup.harness.logs.filter((entry) => entry.message === CARD_WRITE_ENDED).length === count, {
    message: `${count} card writes ended`,
  });

describe("DingTalk adapter: replies streamed into an AI card", () => {
  it("has no reply stream without a card template, so the server sends replies whole", async () => {
    harness = await startHarness();
    expect(canStreamReplies(harness.adapter)).toBe(false);
  });

  it("writes the card at most once a second, always with the latest whole text", async () => {
    const setup = await startCardStream();
    const { fake, clock, stream } = setup;
    stream.update("Roses");
    await writesEnded(setup, 1);
    expect(clock.pendingSleeps()).toBe(0);
    for (const word of ["are", "red,", "violets", "are", "blue"]) stream.update(`Roses ${word}`);
    stream.update("Roses are red, violets are blue");
    await waitUntil(() => clock.pendingSleeps() === 1, { message: "the next write waiting for its slot" });
    clock.advance(CARD_UPDATE_INTERVAL_MS - 1);
    expect(clock.pendingSleeps()).toBe(1);
    expect(writes(fake)).toBe(1);
    clock.advance(1);
    await writesEnded(setup, 2);
    stream.update("Roses are red, violets are blue, sugar");
    await waitUntil(() => clock.pendingSleeps() === 1);
    clock.advance(400);
    expect(writes(fake)).toBe(2);

    const final = "Roses are red, violets are blue, sugar is sweet.";
    const finished = stream.finish(final);
    // The final write waits for the rest of the second too, instead of the stale update's timer.
    await waitUntil(() => clock.pendingSleeps() === 1, { message: "the final write waiting for its slot" });
    expect(writes(fake)).toBe(2);
    clock.advance(600);
    await finished;
    const card = onlyCard(fake);
    expect(card.updates.map((update) => [update.kind, update.content, update.isFinalize])).toEqual([
      ["create", "Roses", false],
      ["stream", "Roses are red, violets are blue", false],
      ["stream", final, true],
    ]);
    expect(card).toMatchObject({
      content: final,
      finalized: true,
      spaceType: "IM_ROBOT",
      spaceId: "staff-001",
    });
    expect(fake.sent()).toEqual([]);
    expect(fake.rejections()).toEqual([]);
  });

  it("shows exactly the final text after a fast stream (one write, then the final one)", async () => {
    const { fake, clock, stream } = await startCardStream();
    let text = "";
    for (let index = 0; index < 200; index += 1) {
      text += `word${index} `;
      stream.update(text);
    }
    const final = `${text.trim()}.\n\n_The end._`;
    const finished = stream.finish(final);
    await waitUntil(() => clock.pendingSleeps() === 1, { message: "the final write waiting for its slot" });
    clock.advance(CARD_UPDATE_INTERVAL_MS);
    await finished;
    const card = onlyCard(fake);
    expect(card.updates.map((update) => update.kind)).toEqual(["create", "stream"]);
    expect(card.updates[0]?.content).toBe("word0 ");
    expect(card).toMatchObject({ content: final, finalized: true });
    expect(fake.sent()).toEqual([]);
  });

  it("shows every update of a slow stream and exactly the final text, without waiting at the end", async () => {
    const setup = await startCardStream();
    const { fake, clock, stream } = setup;
    const parts = ["The", "The weather", "The weather today", "The weather today is mild"];
    for (const [index, part] of parts.entries()) {
      stream.update(part);
      await writesEnded(setup, index + 1);
      clock.advance(1_500);
    }
    await stream.finish("The weather today is mild and sunny.");
    const card = onlyCard(fake);
    expect(card.updates.map((update) => update.content)).toEqual([
      ...parts,
      "The weather today is mild and sunny.",
    ]);
    expect(card.updates.at(-1)?.isFinalize).toBe(true);
    expect(card.content).toBe("The weather today is mild and sunny.");
  });

  it("sends the reply once as a message when DingTalk refuses the card", async () => {
    const { fake, clock, stream } = await startCardStream({ template: "deleted-template.schema" });
    stream.update("First words");
    await waitUntil(() => fake.rejections().length === 1, { message: "the refused card" });
    clock.advance(CARD_UPDATE_INTERVAL_MS);
    stream.update("First words and more");
    clock.advance(CARD_UPDATE_INTERVAL_MS);
    await stream.finish("First words and more, all of them.");
    expect(fake.cards()).toEqual([]);
    expect(fake.rejections()).toEqual([
      expect.objectContaining({ route: "card", status: 400, code: "InvalidParameter.CardTemplateId" }),
    ]);
    expect(fake.sent().map((sent) => [sent.route, sent.text])).toEqual([
      ["sessionWebhook", "First words and more, all of them."],
    ]);
    expect(harness?.logs.some((entry) => entry.message?.includes("card refused") === true)).toBe(true);
  });

  it("sends the whole reply once as a message when the final card write is refused", async () => {
    const setup = await startCardStream();
    const { fake, clock, stream } = setup;
    stream.update("Half of it");
    await writesEnded(setup, 1);
    fake.rateLimitNext({ route: "card" });
    clock.advance(CARD_UPDATE_INTERVAL_MS);
    await stream.finish("Half of it, and the other half.");
    expect(onlyCard(fake)).toMatchObject({ content: "Half of it", finalized: false });
    expect(fake.sent().map((sent) => sent.text)).toEqual(["Half of it, and the other half."]);
  });

  it("streams into a group's card, and sends what outgrows the card as messages after it", async () => {
    const setup = await startCardStream({ conversation: "group" });
    const { fake, clock, inbound, stream } = setup;
    const paragraph = (label: string) => `${label}: ${"lorem ipsum dolor ".repeat(150)}`;
    const final = [paragraph("one"), paragraph("two"), paragraph("three")].join("\n\n");
    expect(final.length).toBeGreaterThan(DINGTALK_MARKDOWN_LIMIT);
    stream.update(paragraph("one"));
    await writesEnded(setup, 1);
    clock.advance(CARD_UPDATE_INTERVAL_MS);
    await stream.finish(final);
    const card = onlyCard(fake);
    expect(card).toMatchObject({ spaceType: "IM_GROUP", spaceId: inbound.conversation.id, finalized: true });
    expect(card.content.length).toBeLessThanOrEqual(DINGTALK_MARKDOWN_LIMIT);
    expect(final.startsWith(card.content)).toBe(true);
    const rest = fake.sent().map((sent) => sent.text);
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.join("\n\n")).toContain(paragraph("three").trim());
    expect(`${card.content}\n\n${rest.join("\n\n")}`.replace(/\s+/g, " ")).toBe(final.replace(/\s+/g, " "));
  });

  it("sends the reply whole to a user DingTalk gave no staff id (no card can reach them)", async () => {
    const clock = createManualClock();
    harness = await startHarness({
      settings: { cardTemplateId: "fake-ai-card-template.schema" },
      adapter: { clock },
    });
    const { fake, adapter } = harness;
    fake.sendRobotMessage({ conversation: "single", text: "hi", senderStaffId: null });
    const inbound = await harness.nextInbound(1);
    if (!canStreamReplies(adapter)) throw new Error("expected a streaming adapter");
    const stream = adapter.startReplyStream({ sessionKey: inbound.sessionKey, text: "", inReplyTo: inbound });
    stream.update("Hello");
    await stream.finish("Hello there.");
    expect(fake.cards()).toEqual([]);
    expect(fake.sent().map((sent) => sent.text)).toEqual(["Hello there."]);
  });
});
