import { describeError, type Logger, type ReplyStream } from "@almanac/core";
import { nextCardCut, renderCardSlice } from "./card-slices.js";
import { RecentMap } from "./recent-map.js";

/** How a streamed reply reaches its conversation (see `OutboundSender.cardStreamTransport`). */
export interface CardStreamTransport {
  /** Sends a card showing `markdown` where the answer goes (after the previous card); returns its message id. */
  sendCard(markdown: string): Promise<string>;
  /** Makes card `messageId` show `markdown`. */
  patchCard(messageId: string, markdown: string): Promise<void>;
  /** Recalls a card sent by this stream. */
  recall(messageId: string): Promise<void>;
  /** Sends `markdown` as ordinary messages where the answer goes (the fallback). */
  sendText(markdown: string): Promise<void>;
  /** True when a card showing `markdown` fits Feishu's request limit. */
  fits(markdown: string): boolean;
}

/** Runs `callback` after `ms` milliseconds; the default is `setTimeout`. Tests pass a fake clock's. */
export type Schedule = (ms: number, callback: () => void) => void;

/** Conversations whose last card request is remembered for the throttle. */
const MAX_THROTTLED_CONVERSATIONS = 1000;

/**
 * When each conversation may next have a card sent or edited: one request a second per conversation, shared by
 * every stream in it (Feishu allows 5 edits a second per message and 5 messages a second per chat; a second apart
 * also keeps a chat's notifications calm).
 */
export class CardThrottle {
  readonly #lastRequestAt = new RecentMap<string, number>(MAX_THROTTLED_CONVERSATIONS);
  readonly #intervalMs: number;
  readonly #now: () => number;
  readonly #schedule: Schedule;

  constructor(options: { now: () => number; schedule: Schedule; intervalMs?: number }) {
    this.#now = options.now;
    this.#schedule = options.schedule;
    this.#intervalMs = options.intervalMs ?? 1000;
  }

  /** Waits until `conversation` may make its next request, then counts that request as made now. */
  async take(conversation: string): Promise<void> {
    const last = this.#lastRequestAt.get(conversation);
    const waitMs = last === undefined ? 0 : last + this.#intervalMs - this.#now();
    if (waitMs > 0) await new Promise<void>((resolve) => this.#schedule(waitMs, resolve));
    // Another stream of the conversation may have gone in the meantime: wait again for it.
    const latest = this.#lastRequestAt.get(conversation);
    if (latest !== undefined && latest !== last && latest + this.#intervalMs > this.#now()) {
      return this.take(conversation);
    }
    this.#lastRequestAt.set(conversation, this.#now());
  }
}

/** A slice `[start, end)` of the reply: its exact text, and the Markdown a card shows for it. */
interface Slice {
  readonly start: number;
  readonly end: number;
  readonly text: string;
  readonly markdown: string;
}

/** A card of the stream and the slice it shows. */
interface ShownCard extends Slice {
  readonly messageId: string;
}

/** The one request that brings the cards closer to a text. */
type Step =
  | ({ readonly kind: "send" } & Slice)
  | ({ readonly kind: "patch"; readonly index: number } & Slice)
  | { readonly kind: "recall"; readonly index: number };

/** Dependencies of {@link FeishuReplyStream}. */
export interface FeishuReplyStreamOptions {
  readonly transport: CardStreamTransport;
  readonly throttle: CardThrottle;
  /** The conversation's key for the throttle (its session key). */
  readonly conversation: string;
  readonly logger: Logger;
  /** Characters per card (see `STREAM_CARD_CHARACTER_LIMIT`). */
  readonly cardCharacterLimit?: number;
}

/**
 * A reply streamed into interactive cards (`im/v1/messages` PATCH of shared cards, `config.update_multi`): the
 * first text sends a card, later text edits it at most once a second per conversation, and past the card limit the
 * reply continues in a new card. Chosen over CardKit's streaming API because the PATCH needs only the permissions
 * sending already needs, the SDK has it, and it works the same on Feishu and Lark.
 *
 * The cards always show exact slices of the reply, in order; `finish` edits (or adds, or recalls) cards until they
 * show exactly the final text. When Feishu refuses a request, editing stops and `finish` sends what the cards do
 * not show as ordinary messages: only the part after the shown text when the cards show the start of the final
 * reply (so nothing is said twice), else the whole reply after recalling the cards.
 */
export class FeishuReplyStream implements ReplyStream {
  readonly #options: FeishuReplyStreamOptions;
  readonly #cards: ShownCard[] = [];
  #latest = "";
  #final: string | undefined;
  #pumping: Promise<void> | undefined;
  /** Set when Feishu refused a request: no more requests for cards; `finish` falls back. */
  #broken = false;

  constructor(options: FeishuReplyStreamOptions) {
    this.#options = options;
  }

  /** Shows `text` (the whole reply so far) when the throttle next allows. Never throws. */
  update(text: string): void {
    if (this.#final !== undefined) return;
    this.#latest = text;
    this.#kick();
  }

  /** Waits for the edit in flight, then makes the cards show exactly `text` (or falls back; see the class). */
  async finish(text: string): Promise<void> {
    if (this.#final !== undefined) throw new RangeError("FeishuReplyStream.finish was already called");
    this.#final = text;
    this.#kick();
    while (this.#pumping !== undefined) await this.#pumping;
    if (this.#broken) await this.#fallBack(text);
  }

  #kick(): void {
    if (this.#pumping !== undefined || this.#broken) return;
    this.#pumping = this.#pump().finally(() => {
      this.#pumping = undefined;
    });
  }

  /** One request at a time, each after the throttle allows it, toward the newest text. */
  async #pump(): Promise<void> {
    const { throttle, conversation, logger } = this.#options;
    while (!this.#broken) {
      if (this.#nextStep() === undefined) return;
      await throttle.take(conversation);
      // The text may have grown while waiting: act on the newest.
      const step = this.#nextStep();
      if (step === undefined) return;
      try {
        await this.#perform(step);
      } catch (error) {
        this.#broken = true;
        logger.warn({ step: step.kind, error: describeError(error) }, "Feishu streamed card not updated");
      }
    }
  }

  /** The next request toward the final text (or the newest text while streaming); undefined when shown. */
  #nextStep(): Step | undefined {
    const final = this.#final !== undefined;
    const text = this.#final ?? this.#latest;
    const { transport, cardCharacterLimit } = this.#options;
    const sliceFrom = (start: number): Slice => {
      const end = nextCardCut(text, start, (markdown) => transport.fits(markdown), cardCharacterLimit);
      return { start, end, text: text.slice(start, end), markdown: renderCardSlice(text, start, end) };
    };
    let start = 0;
    for (const [index, card] of this.#cards.entries()) {
      if (text.slice(start).trim() === "") {
        // The reply ends before this card: only the final text takes cards back.
        return final ? { kind: "recall", index } : undefined;
      }
      const slice = sliceFrom(start);
      if (card.start !== slice.start || card.text !== slice.text || card.markdown !== slice.markdown) {
        return { kind: "patch", index, ...slice };
      }
      start = slice.end;
    }
    if (text.slice(start).trim() === "") return undefined;
    return { kind: "send", ...sliceFrom(start) };
  }

  async #perform(step: Step): Promise<void> {
    const { transport } = this.#options;
    if (step.kind === "send") {
      const { kind: _kind, ...slice } = step;
      const messageId = await transport.sendCard(step.markdown);
      this.#cards.push({ messageId, ...slice });
      return;
    }
    const card = this.#cards[step.index];
    if (card === undefined) return;
    if (step.kind === "recall") {
      await transport.recall(card.messageId);
      this.#cards.splice(step.index, 1);
      return;
    }
    const { kind: _kind, index: _index, ...slice } = step;
    await transport.patchCard(card.messageId, step.markdown);
    this.#cards[step.index] = { messageId: card.messageId, ...slice };
  }

  /**
   * After a refused request: the person gets the reply exactly once. The cards shown so far hold exact slices of
   * the text they were cut from; when those slices are the start of the final reply, only the rest is sent (its
   * code fence reopened if it starts inside one). Otherwise (the final reply differs, e.g. a failure's words)
   * the cards are recalled and the whole reply is sent; a card that cannot be recalled is logged, and the reply is
   * still sent, since a stale card is better than a lost answer.
   */
  async #fallBack(text: string): Promise<void> {
    const { transport, logger } = this.#options;
    // Slices are cut from texts that only grew, so together they are the start of the newest text.
    const shownText = this.#cards.map((card) => card.text).join("");
    if (text.startsWith(shownText)) {
      const shownEnd = shownText.length;
      if (text.slice(shownEnd).trim() === "") return;
      await transport.sendText(renderCardSlice(text, shownEnd, text.length));
      return;
    }
    for (const card of this.#cards) {
      try {
        await transport.recall(card.messageId);
      } catch (error) {
        logger.warn(
          { messageId: card.messageId, error: describeError(error) },
          "Feishu streamed card not recalled",
        );
      }
    }
    this.#cards.length = 0;
    await transport.sendText(text);
  }
}
