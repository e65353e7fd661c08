import type { InboundMessage, ReplyStream } from "@almanac/core";
import { waitUntil } from "@almanac/testkit/discord";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AdapterHarness, createAdapterHarness } from "../test/adapter-harness.js";
import { ManualTimers } from "../test/manual-timers.js";
import { toDiscordChunks } from "./convert-outbound.js";

let harness: AdapterHarness;
let timers: ManualTimers;

beforeEach(async () => {
  timers = new ManualTimers(Date.now());
  harness = await createAdapterHarness({
    fake: { clock: timers.now },
    adapter: { clock: timers.now, timers },
  });
  await harness.start();
});
afterEach(async () => {
  await harness.close();
});

/** A DM from the world's user, as delivered by the adapter. */
async function ask(content = "a question"): Promise<InboundMessage> {
  const event = harness.fake.dispatchMessage({ where: "dm", content });
  return harness.received((message) => message.id === event.d.id);
}

function streamTo(message: InboundMessage): ReplyStream {
  return harness.adapter.startReplyStream({ sessionKey: message.sessionKey, text: "", inReplyTo: message });
}

/** Waits until the stream is idle, waiting for its pace (a timer is set), then lets `ms` pass. */
async function afterPace(ms = 1000): Promise<number> {
  await waitUntil(() => timers.pending() > 0, { what: "the stream to wait for its pace" });
  return timers.advance(ms);
}

/** Finishes the stream, letting a second pass if it waits for its pace. */
async function finishPaced(stream: ReplyStream, text: string): Promise<void> {
  let finished = false;
  const done = stream.finish(text).finally(() => {
    finished = true;
  });
  await waitUntil(() => finished || timers.pending() > 0, { what: "the stream to finish or wait" });
  if (!finished) timers.advance(1000);
  await done;
}

const dm = () => harness.fake.world.ids.dmChannel;
const shownTexts = () => harness.fake.shown(dm()).map((message) => message.content);

describe("streamed replies", () => {
  it("posts the text so far a second after the first text, replying to the question, then edits once a second", async () => {
    const { fake } = harness;
    const message = await ask();
    const stream = streamTo(message);
    stream.update("The answer");
    await waitUntil(() => timers.pending() > 0);
    expect(timers.advance(999)).toBe(0);
    stream.update("The answer is");
    expect(fake.sent()).toEqual([]);
    expect(timers.advance(1)).toBe(1);
    const [first] = await waitUntil(() => fake.sent().length === 1 && fake.sent());
    expect(first).toMatchObject({ content: "The answer is", messageReference: { message_id: message.id } });

    stream.update("The answer is forty");
    await waitUntil(() => timers.pending() > 0);
    expect(timers.advance(999)).toBe(0);
    expect(fake.edits()).toEqual([]);
    expect(timers.advance(1)).toBe(1);
    await waitUntil(() => fake.edits().length === 1);
    expect(fake.edits()[0]).toMatchObject({ messageId: first?.id, content: "The answer is forty" });

    stream.update("The answer is forty-two");
    await afterPace();
    await waitUntil(() => fake.edits().length === 2);
    await finishPaced(stream, "The answer is forty-two.");

    expect(shownTexts()).toEqual(["The answer is forty-two."]);
    expect(fake.sent()).toHaveLength(1);
    const times = fake.edits().map((edit) => edit.at);
    expect(times).toHaveLength(3);
    for (const [index, at] of times.entries()) {
      if (index > 0) expect(at - (times[index - 1] ?? 0)).toBeGreaterThanOrEqual(1000);
    }
  });

  it("posts a fast model's reply whole, without edits: one update, then finish within the first second", async () => {
    const message = await ask();
    const stream = streamTo(message);
    stream.update("Sure");
    await stream.finish("Sure, here it is: 42.");
    expect(shownTexts()).toEqual(["Sure, here it is: 42."]);
    expect(harness.fake.sent()[0]?.messageReference?.message_id).toBe(message.id);
    expect(harness.fake.edits()).toEqual([]);
    expect(timers.pending()).toBe(0);
  });

  it("ends with exactly the final text when the model finishes right after the first post", async () => {
    const stream = streamTo(await ask());
    stream.update("Sure");
    await afterPace();
    await waitUntil(() => harness.fake.sent().length === 1);
    await finishPaced(stream, "Sure, here it is: 42.");
    expect(shownTexts()).toEqual(["Sure, here it is: 42."]);
    expect(harness.fake.sent()).toHaveLength(1);
    expect(harness.fake.edits().map((edit) => edit.content)).toEqual(["Sure, here it is: 42."]);
  });

  it("keeps to one edit a second under a slow model, each showing the whole text so far, and ends exact", async () => {
    const { fake } = harness;
    const stream = streamTo(await ask());
    const words = Array.from({ length: 40 }, (_, index) => `word${index}`);
    let text = "";
    for (const [index, word] of words.entries()) {
      text = index === 0 ? word : `${text} ${word}`;
      stream.update(text);
      await afterPace(250);
    }
    const final = `${text}.`;
    await finishPaced(stream, final);

    expect(shownTexts()).toEqual([final]);
    const edits = fake.edits();
    // 39 updates over ten simulated seconds: about one edit a second, never two within one.
    expect(edits.length).toBeGreaterThanOrEqual(8);
    expect(edits.length).toBeLessThanOrEqual(11);
    for (const [index, edit] of edits.entries()) {
      expect(final.startsWith(edit.content.replace(/\.$/, ""))).toBe(true);
      if (index > 0) expect(edit.at - (edits[index - 1]?.at ?? 0)).toBeGreaterThanOrEqual(1000);
    }
    expect(harness.logs).toEqual([]);
  });

  it("continues past 2,000 characters in new messages with code fences intact, and ends exact", async () => {
    const { fake } = harness;
    const message = await ask();
    const stream = streamTo(message);
    const prose = "This paragraph explains the change before the code. ".repeat(30);
    const code = Array.from({ length: 50 }, (_, line) => `const value${line} = compute(${line});`);
    const final = `${prose.trim()}\n\n\`\`\`ts\n${code.join("\n")}\n\`\`\`\n\nThat is all.`;
    for (const share of [0.1, 0.4, 0.6, 0.75, 0.9]) {
      stream.update(final.slice(0, Math.round(final.length * share)));
      await afterPace();
    }
    await finishPaced(stream, final);

    const shown = fake.shown(dm());
    expect(shown.map((part) => part.content)).toEqual(toDiscordChunks(final));
    expect(shown.length).toBeGreaterThanOrEqual(2);
    for (const part of shown) {
      expect(part.content.length).toBeLessThanOrEqual(2000);
      expect((part.content.match(/```/g) ?? []).length % 2).toBe(0);
    }
    const codeLines = shown
      .flatMap((part) => part.content.split("\n"))
      .filter((line) => line.startsWith("const "));
    expect(codeLines).toEqual(code);
    const sent = fake.sent();
    expect(sent[0]?.messageReference?.message_id).toBe(message.id);
    expect(sent.slice(1).every((part) => part.messageReference === undefined)).toBe(true);
    expect(fake.edits().length).toBeGreaterThan(0);
    expect(harness.logs).toEqual([]);
  });

  it("sends the final text anew, replying to the question, when its message was deleted meanwhile", async () => {
    const { fake } = harness;
    const message = await ask();
    const stream = streamTo(message);
    stream.update("Part one");
    await afterPace();
    const [first] = await waitUntil(() => fake.sent().length === 1 && fake.sent());
    fake.deleteMessage(first?.id ?? "");
    stream.update("Part one and two");
    await afterPace();
    await waitUntil(() => harness.logs.some((entry) => entry.message?.includes("could not be updated")));
    await finishPaced(stream, "Part one and two, done.");

    expect(shownTexts()).toEqual(["Part one and two, done."]);
    expect(fake.sent().at(-1)?.messageReference?.message_id).toBe(message.id);
  });

  it("sends only the missing rest as a new message when Discord keeps refusing the edit", async () => {
    const { fake } = harness;
    const stream = streamTo(await ask());
    stream.update("Part one");
    await afterPace();
    await waitUntil(() => fake.sent().length === 1);
    fake.failNext("PATCH /channels/:id/messages/:id", 403, 10);
    stream.update("Part one and two");
    await afterPace();
    await finishPaced(stream, "Part one and two, done.");

    expect(shownTexts()).toEqual(["Part one", "and two, done."]);
    expect(fake.edits()).toEqual([]);
  });

  it("waits out a rate-limited edit as discord.js queues it, and still ends exact", async () => {
    const { fake } = harness;
    const stream = streamTo(await ask());
    stream.update("Almost");
    await afterPace();
    await waitUntil(() => fake.sent().length === 1);
    fake.rateLimitNext("PATCH /channels/:id/messages/:id", 0.2);
    await finishPaced(stream, "Almost there, and done.");

    expect(fake.rateLimits()).toHaveLength(1);
    expect(shownTexts()).toEqual(["Almost there, and done."]);
    expect(fake.sent()).toHaveLength(1);
  });

  it("deletes messages the final text no longer needs", async () => {
    const { fake } = harness;
    const stream = streamTo(await ask());
    stream.update(`${"a ".repeat(900)}\n\n${"b ".repeat(900)}`);
    await afterPace();
    await waitUntil(() => fake.sent().length === 2);
    await finishPaced(stream, "Short after all.");

    expect(shownTexts()).toEqual(["Short after all."]);
    expect(fake.deletions()).toMatchObject([{ by: "bot", messageId: fake.sent()[1]?.id }]);
  });

  it("shares one pace between two replies streaming in the same channel", async () => {
    const { fake } = harness;
    const message = await ask();
    const first = streamTo(message);
    const second = streamTo(message);
    first.update("first");
    second.update("second");
    await waitUntil(() => timers.pending() === 2);
    timers.advance(1000);
    await waitUntil(() => fake.sent().length === 2);
    first.update("first, more");
    second.update("second, more");
    await waitUntil(() => timers.pending() === 2);
    timers.advance(1000);
    await waitUntil(() => fake.edits().length === 1);
    await afterPace();
    await waitUntil(() => fake.edits().length === 2);
    const [one, two] = fake.edits();
    expect((two?.at ?? 0) - (one?.at ?? 0)).toBeGreaterThanOrEqual(1000);
    expect(shownTexts().sort()).toEqual(["first, more", "second, more"]);
  });

  it("posts the first text at once when configured without a hold", async () => {
    await harness.close();
    harness = await createAdapterHarness({
      fake: { clock: timers.now },
      adapter: { clock: timers.now, timers, streamFirstPostDelayMs: 0 },
    });
    await harness.start();
    const stream = streamTo(await ask());
    stream.update("Right away");
    await waitUntil(() => harness.fake.sent().length === 1);
    expect(harness.fake.sent()[0]?.content).toBe("Right away");
    await finishPaced(stream, "Right away, and complete.");
    expect(shownTexts()).toEqual(["Right away, and complete."]);
  });
});
