import { randomUUID } from "node:crypto";
import { type Logger, type ReplyStream, splitMessage } from "@almanac/core";
import type { CardApi, CardTarget } from "./card-api.js";
import type { DingTalkClock } from "./types.js";

/** A card is written at most this often (DingTalk throttles card updates; one a second reads as typing). */
export const CARD_UPDATE_INTERVAL_MS = 1_000;

/** Settings of {@link CardReplyStream}. */
export interface CardReplyStreamSettings {
  readonly cards: CardApi;
  /** The conversation; undefined when no card can go there (a user without a staff id): the reply is sent whole. */
  readonly target: CardTarget | undefined;
  /** Longest text a card shows; the rest of a longer reply follows as plain messages. */
  readonly contentLimit: number;
  readonly clock: DingTalkClock;
  readonly logger: Logger;
  /** Sends text as plain messages: the fallback when the card cannot be shown, and a long reply's rest. */
  readonly sendPlain: (text: string) => Promise<void>;
}

type Phase = "new" | "live" | "failed";

/** Debug log line after each write to a card (succeeded or not), before the next one is scheduled. */
export const CARD_WRITE_ENDED = "DingTalk card write ended";

/**
 * One reply streamed into a DingTalk AI card. The first update creates and delivers the card with the text so far;
 * later ones replace its content, at most once per {@link CARD_UPDATE_INTERVAL_MS} (the one reply in flight of a
 * conversation: its turns run one at a time). `finish` waits for the write in flight, then writes the final text
 * with `isFinalize`, so the card shows exactly the reply. When the card is refused (create or the final write), the
 * whole reply is sent once as plain messages instead.
 */
export class CardReplyStream implements ReplyStream {
  readonly #settings: CardReplyStreamSettings;
  readonly #outTrackId = `almanac-${randomUUID()}`;
  #phase: Phase;
  #finishing = false;
  #latest = "";
  /** The content the card shows (after the last write that succeeded). */
  #shown: string | undefined;
  /**
   * When the last write ended. The interval runs from there, not from its start, so that DingTalk, which counts
   * requests as they arrive, sees them at least the interval apart however long one took (a token fetch, a slow network).
   */
  #lastWriteAt = Number.NEGATIVE_INFINITY;
  #inFlight: Promise<void> | undefined;
  #timer: AbortController | undefined;

  constructor(settings: CardReplyStreamSettings) {
    this.#settings = settings;
    this.#phase = settings.target === undefined ? "failed" : "new";
  }

  update(text: string): void {
    if (this.#finishing || this.#phase === "failed") return;
    this.#latest = text;
    this.#schedule();
  }

  async finish(text: string): Promise<void> {
    if (this.#finishing) return;
    this.#finishing = true;
    this.#timer?.abort();
    this.#timer = undefined;
    await this.#inFlight;
    const { clock, logger, sendPlain, target } = this.#settings;
    // Nothing shown yet (no card, or it was refused): the reply goes out whole, once.
    if (this.#phase !== "live" || target === undefined) {
      await sendPlain(text);
      return;
    }
    const [head = "", ...rest] = this.#split(text);
    const wait = this.#lastWriteAt + CARD_UPDATE_INTERVAL_MS - clock.now();
    if (wait > 0) await clock.sleep(wait);
    try {
      await this.#settings.cards.stream(this.#outTrackId, head, true);
    } catch (error) {
      logger.warn(
        { outTrackId: this.#outTrackId, err: error },
        "DingTalk card could not be finalized; sending the reply as a message",
      );
      await sendPlain(text);
      return;
    }
    if (rest.length > 0) await sendPlain(rest.join("\n\n"));
  }

  /** Writes now when the interval allows, else once it does; a write in flight picks the latest text up after. */
  #schedule(): void {
    if (this.#inFlight !== undefined || this.#timer !== undefined) return;
    const { clock } = this.#settings;
    const wait = this.#lastWriteAt + CARD_UPDATE_INTERVAL_MS - clock.now();
    if (wait <= 0) {
      this.#write();
      return;
    }
    const timer = new AbortController();
    this.#timer = timer;
    void clock.sleep(wait, timer.signal).then(() => {
      if (timer.signal.aborted) return;
      this.#timer = undefined;
      this.#write();
    });
  }

  #write(): void {
    const [content = ""] = this.#split(this.#latest);
    if (content === this.#shown || content.trim() === "") return;
    this.#inFlight = this.#send(content).finally(() => {
      this.#lastWriteAt = this.#settings.clock.now();
      this.#settings.logger.debug({ outTrackId: this.#outTrackId, chars: content.length }, CARD_WRITE_ENDED);
      this.#inFlight = undefined;
      if (!this.#finishing && this.#phase === "live" && this.#split(this.#latest)[0] !== this.#shown)
        this.#schedule();
    });
  }

  /** Creates the card or replaces its content; never throws (a refused create turns the stream to plain). */
  async #send(content: string): Promise<void> {
    const { cards, target, logger } = this.#settings;
    try {
      if (this.#phase === "new" && target !== undefined) {
        await cards.createAndDeliver(this.#outTrackId, target, content);
        this.#phase = "live";
      } else {
        await cards.stream(this.#outTrackId, content, false);
      }
      this.#shown = content;
    } catch (error) {
      if (this.#phase === "new") {
        this.#phase = "failed";
        logger.warn({ err: error }, "DingTalk card refused; the reply will be sent as a message");
      } else {
        // A lost intermediate update is shown by the next one; the final write decides.
        logger.warn({ outTrackId: this.#outTrackId, err: error }, "DingTalk card update failed");
      }
    }
  }

  /** The text in card-sized parts: the card shows the first. */
  #split(text: string): string[] {
    return splitMessage(text, this.#settings.contentLimit);
  }
}
