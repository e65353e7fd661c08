import type { InboundMessage, ReplyStream } from "@almanac/core";
import { waitUntil } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../test/adapter-harness.js";
import { nextCardCut, renderCardSlice, STREAM_CARD_CHARACTER_LIMIT } from "./card-slices.js";

/** A clock the test moves: the adapter's throttle waits on its timers, the fake records times by it. */
class FakeClock {
  now = 1_800_000_000_000;
  readonly #timers: { at: number; callback: () => void }[] = [];
  readonly read = (): number => this.now;
  readonly schedule = (ms: number, callback: () => void): void => {
    this.#timers.push({ at: this.now + ms, callback });
    this.#timers.sort((left, right) => left.at - right.at);
  };
  pending(): number {
    return this.#timers.length;
  }
  /** Moves to the next timer and runs it. */
  runNext(): void {
    const next = this.#timers.shift();
    if (next === undefined) return;
    this.now = Math.max(this.now, next.at);
    next.callback();
  }
  /** Moves the clock to `at`; returns the timers that came due (run). */
  advanceTo(at: number): number {
    let ran = 0;
    while ((this.#timers[0]?.at ?? Number.POSITIVE_INFINITY) <= at) {
      this.runNext();
      ran += 1;
    }
    this.now = Math.max(this.now, at);
    return ran;
  }
}

let harness: Harness | undefined;
let clock: FakeClock;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const start = async () => {
  clock = new FakeClock();
  harness = await startHarness({
    fake: { clock: clock.read },
    settings: { mode: "webhook", verificationToken: "vt" },
    options: { now: clock.read, schedule: clock.schedule },
  });
  return harness;
};

const question: InboundMessage = {
  sessionKey: "feishu:default:dm:ou_user_1",
  channel: "feishu",
  id: "om_question",
  account: "default",
  conversation: { kind: "dm", id: "oc_p2p_ou_user_1" },
  sender: { id: "ou_user_1" },
  mentioned: true,
  text: "tell me",
  receivedAt: 0,
};

const open = ({ adapter }: Harness): ReplyStream =>
  adapter.startReplyStream({ sessionKey: question.sessionKey, text: "", inReplyTo: question });

/** Requests that changed what the chat shows: card sends and accepted or refused card updates. */
const requestCount = ({ fake }: Harness) => fake.sent().length + fake.cardUpdates().length;

/** After an update: the stream either went at once (a request) or waits for the throttle (a timer). */
async function afterUpdate(h: Harness, before: number): Promise<void> {
  await waitUntil(() => clock.pending() > 0 || requestCount(h) > before, { what: "the stream to act" });
}

/** Runs the throttle's timers (each releasing one request) until `promise` settles. */
async function complete(promise: Promise<void>): Promise<void> {
  let done = false;
  const tracked = promise.finally(() => {
    done = true;
  });
  while (!done) {
    await waitUntil(() => done || clock.pending() > 0, { what: "the stream to finish or wait" });
    if (!done) clock.runNext();
  }
  await tracked;
}

/** The Markdown every card shows now, in the order they were sent. */
const cardTexts = ({ fake }: Harness): string[] =>
  fake
    .sent()
    .filter((message) => message.msgType === "interactive" && !fake.recalled().includes(message.messageId))
    .map((message) => {
      const card: unknown = fake.card(message.messageId);
      const elements: unknown = Reflect.get(Object(card), "elements");
      return String(Reflect.get(Object(Array.isArray(elements) ? elements[0] : {}), "content"));
    });

const postTexts = ({ fake }: Harness): string[] =>
  fake
    .sent()
    .filter((message) => message.msgType === "post")
    .map((message) => {
      const paragraphs: unknown = Reflect.get(
        Object(Reflect.get(Object(message.content), "zh_cn")),
        "content",
      );
      return String(Reflect.get(Object(Array.isArray(paragraphs) ? paragraphs[0]?.[0] : {}), "text"));
    });

describe("FeishuAdapter.startReplyStream", () => {
  it("a fast model: one card on the first text, one edit to exactly the final text", async () => {
    const h = await start();
    const stream = open(h);
    stream.update("Hel");
    await waitUntil(() => h.fake.sent().length === 1);
    const [card] = h.fake.sent();
    expect(card).toMatchObject({ kind: "reply", replyTo: "om_question", msgType: "interactive" });
    expect(card?.content).toMatchObject({ config: { update_multi: true } });
    await complete(stream.finish("Hello, **world**."));
    expect(cardTexts(h)).toEqual(["Hello, **world**."]);
    // The edit waited for the throttle: a second after the card was sent.
    expect(h.fake.cardUpdates()).toMatchObject([{ accepted: true, at: 1_800_000_001_000 }]);
    expect(h.fake.sent()).toHaveLength(1);
  });

  it("a slow model: edits at most once a second with the newest text, and ends with exactly the reply", async () => {
    const h = await start();
    const stream = open(h);
    const started = clock.now;
    let text = "";
    // 40 deltas, 170 ms apart: 6.8 s of writing.
    for (let index = 0; index < 40; index += 1) {
      const before = requestCount(h);
      const ran = clock.advanceTo(started + index * 170);
      if (ran > 0) await waitUntil(() => requestCount(h) > before, { what: "the released edit" });
      text += `word${index} `;
      const beforeUpdate = requestCount(h);
      stream.update(text);
      await afterUpdate(h, beforeUpdate);
    }
    const final = `${text.trim()}.`;
    await complete(stream.finish(final));
    // The card was sent at once, on the first text.
    const times = [started, ...h.fake.cardUpdates().map((update) => update.at)];
    expect(h.fake.cardUpdates().every((update) => update.accepted)).toBe(true);
    for (const [index, at] of times.entries()) {
      if (index > 0) expect(at - (times[index - 1] ?? 0)).toBeGreaterThanOrEqual(1000);
    }
    // 6.8 s of writing: about one edit a second, never more.
    expect(h.fake.cardUpdates().length).toBeGreaterThanOrEqual(6);
    expect(h.fake.cardUpdates().length).toBeLessThanOrEqual(8);
    expect(cardTexts(h)).toEqual([final]);
    // No edit repeats the text shown before it.
    const shown = h.fake.cardUpdates().map((update) => JSON.stringify(update.content));
    expect(new Set(shown).size).toBe(shown.length);
  });

  it("continues in a new card past the card limit, the cards together being exactly the reply", async () => {
    const h = await start();
    const stream = open(h);
    const paragraph = (index: number) => `Paragraph ${index}: ${"lorem ipsum dolor ".repeat(5)}`.trim();
    const paragraphs = Array.from({ length: 180 }, (_, index) => paragraph(index));
    const reply = paragraphs.join("\n\n");
    expect(reply.length).toBeGreaterThan(2 * STREAM_CARD_CHARACTER_LIMIT);
    for (const count of [20, 90, 150]) {
      const before = requestCount(h);
      stream.update(paragraphs.slice(0, count).join("\n\n"));
      await afterUpdate(h, before);
    }
    await complete(stream.finish(reply));
    const cards = cardTexts(h);
    expect(cards.length).toBe(3);
    expect(cards.join("")).toBe(reply);
    for (const card of cards.slice(0, -1)) expect(card.endsWith("\n\n")).toBe(true);
    expect(h.fake.requests().every((request) => request.code === 0)).toBe(true);
    // Later cards follow the first as replies to the same question.
    expect(h.fake.sent().map((message) => message.replyTo)).toEqual([
      "om_question",
      "om_question",
      "om_question",
    ]);
  });

  it("an edit refused: stops editing, and sends only what the card does not show", async () => {
    const h = await start();
    const stream = open(h);
    stream.update("The answer is");
    await waitUntil(() => h.fake.sent().length === 1);
    h.fake.failNext({ code: 230031, msg: "Message has expired when updating message.", httpStatus: 400 });
    stream.update("The answer is forty");
    await complete(stream.finish("The answer is forty-two."));
    const patches = h.fake.requests().filter((request) => request.method === "PATCH");
    expect(patches).toMatchObject([{ code: 230031 }]);
    expect(cardTexts(h)).toEqual(["The answer is"]);
    expect(postTexts(h)).toEqual([" forty-two."]);
    expect(`${cardTexts(h).join("")}${postTexts(h).join("")}`).toBe("The answer is forty-two.");
    expect(h.fake.sent().at(-1)).toMatchObject({ kind: "reply", replyTo: "om_question" });
  });

  it("an edit refused and a different final text: recalls the card and sends the whole reply once", async () => {
    const h = await start();
    const stream = open(h);
    stream.update("Looking it up");
    await waitUntil(() => h.fake.sent().length === 1);
    h.fake.failNext({ code: 230099, msg: "Failed to update card content.", httpStatus: 400 });
    stream.update("Looking it up in the");
    const failure = "Sorry, something went wrong while answering.";
    await complete(stream.finish(failure));
    const [card] = h.fake.sent();
    expect(h.fake.recalled()).toEqual([card?.messageId]);
    expect(cardTexts(h)).toEqual([]);
    expect(postTexts(h)).toEqual([failure]);
  });

  it("a final text shorter than the cards: edits the first card and recalls the rest", async () => {
    const h = await start();
    const stream = open(h);
    const long = Array.from({ length: 120 }, (_, index) => `Line ${index} ${"x".repeat(90)}`).join("\n\n");
    stream.update(long);
    while (h.fake.sent().length < 2) {
      await waitUntil(() => clock.pending() > 0 || h.fake.sent().length >= 2, { what: "the second card" });
      if (h.fake.sent().length < 2) clock.runNext();
    }
    expect(cardTexts(h).join("")).toBe(long);
    await complete(stream.finish("Stopped."));
    expect(cardTexts(h)).toEqual(["Stopped."]);
    expect(h.fake.recalled()).toEqual([h.fake.sent()[1]?.messageId]);
    expect(postTexts(h)).toEqual([]);
  });
});

describe("card slices", () => {
  it("cut at paragraph breaks within the limit and stay put as the text grows", () => {
    const fits = () => true;
    const text = `${"a".repeat(60)}\n\n${"b".repeat(60)}\n\n${"c".repeat(60)}`;
    const cut = nextCardCut(text, 0, fits, 100);
    expect(text.slice(0, cut)).toBe(`${"a".repeat(60)}\n\n`);
    expect(nextCardCut(`${text} and more`, 0, fits, 100)).toBe(cut);
    expect(nextCardCut("short", 0, fits, 100)).toBe(5);
  });

  it("close a code fence at a card's end and reopen it at the next card's start", () => {
    const text = "Here:\n```ts\nconst a = 1;\nconst b = 2;\n```\nDone.";
    const cut = text.indexOf("const b");
    expect(renderCardSlice(text, 0, cut)).toBe("Here:\n```ts\nconst a = 1;\n```");
    expect(renderCardSlice(text, cut, text.length)).toBe("```ts\nconst b = 2;\n```\nDone.");
  });
});
