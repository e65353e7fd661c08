import { type Logger, type ReplyStream, splitMessage } from "@almanac/core";
import { toDiscordChunks } from "./convert-outbound.js";
import type { EditPacer } from "./edit-pacer.js";
import { DiscordApiError } from "./errors.js";
import { DISCORD_MESSAGE_LIMIT, type DiscordTimers } from "./types.js";

/** The REST calls a streamed reply makes, bound to its conversation by the adapter. */
export interface ReplyTransport {
  /** Posts a message and returns its id; `asReply` makes it reply to the message being answered. */
  post(content: string, asReply: boolean): Promise<string>;
  edit(messageId: string, content: string): Promise<void>;
  remove(messageId: string): Promise<void>;
}

/** What a {@link DiscordReplyStream} needs. */
export interface ReplyStreamOptions {
  readonly transport: ReplyTransport;
  /** The conversation's key for the shared {@link EditPacer} (its Discord channel). */
  readonly conversation: string;
  readonly pacer: EditPacer;
  /** How long the first text is held before it is posted (0: at once). */
  readonly firstPostDelayMs: number;
  readonly clock: () => number;
  readonly timers: DiscordTimers;
  readonly logger: Logger;
}

/** One message of the reply as posted: its id and the content it shows. */
interface ShownMessage {
  readonly id: string;
  readonly content: string;
}

/**
 * A reply shown on Discord as the model writes it. The first text is held for `firstPostDelayMs` (a second) and
 * then posted with all the text so far, so a short reply is posted whole and never edited; later text edits that
 * message, at most once per second per conversation (the {@link EditPacer}), with the whole text so far; past
 * 2,000 characters it continues in new messages, split as a plain send splits (code fences closed and reopened).
 * `finish` waits for an edit in flight, then makes the messages show exactly the final text: parts that changed
 * are edited, new parts posted, messages left over deleted. When an edit is refused (the message was deleted,
 * Discord keeps refusing) the stream stops editing; `finish` then posts what that message is missing, and
 * everything after it, as plain messages.
 */
export class DiscordReplyStream implements ReplyStream {
  readonly #options: ReplyStreamOptions;
  #shown: readonly ShownMessage[] = [];
  /** The newest text `update` gave, and the text the messages show. */
  #latest: string | undefined;
  #rendered: string | undefined;
  /** When the first text arrived (the hold before the first post counts from it). */
  #startedAt: number | undefined;
  #inFlight: Promise<void> | undefined;
  #timer: unknown;
  /** An edit or post failed while streaming: nothing more is shown until `finish`. */
  #stalled = false;
  #finishing: Promise<void> | undefined;

  constructor(options: ReplyStreamOptions) {
    this.#options = options;
  }

  update(text: string): void {
    if (this.#finishing !== undefined || this.#stalled || text.trim() === "") return;
    this.#startedAt ??= this.#options.clock();
    this.#latest = text;
    this.#schedule();
  }

  finish(text: string): Promise<void> {
    this.#finishing ??= this.#finish(text);
    return this.#finishing;
  }

  /** Starts showing the newest text now, or sets a timer for when the pace allows it. */
  #schedule(): void {
    if (this.#inFlight !== undefined || this.#timer !== undefined) return;
    if (this.#finishing !== undefined || this.#stalled) return;
    const text = this.#latest;
    if (text === undefined || text === this.#rendered) return;
    const { pacer, conversation, timers, clock, firstPostDelayMs } = this.#options;
    const wait =
      this.#shown.length === 0
        ? (this.#startedAt ?? clock()) + firstPostDelayMs - clock()
        : pacer.waitMs(conversation);
    if (wait > 0) {
      this.#timer = timers.setTimeout(() => {
        this.#timer = undefined;
        this.#schedule();
      }, wait);
      return;
    }
    pacer.mark(conversation);
    this.#inFlight = this.#show(toDiscordChunks(text))
      .then(
        () => {
          this.#rendered = text;
        },
        (error: unknown) => {
          this.#stalled = true;
          this.#options.logger.warn(
            { error: error instanceof Error ? error.message : String(error) },
            "discord streamed reply could not be updated; the rest follows when it is finished",
          );
        },
      )
      .finally(() => {
        this.#inFlight = undefined;
        this.#schedule();
      });
  }

  /** Edits the messages whose part changed and posts the new parts; throws at the first refusal. */
  async #show(chunks: readonly string[]): Promise<void> {
    const { transport } = this.#options;
    for (const [index, content] of chunks.entries()) {
      const shown = this.#shown[index];
      if (shown === undefined) {
        const id = await transport.post(content, index === 0);
        this.#shown = [...this.#shown, { id, content }];
      } else if (shown.content !== content) {
        await transport.edit(shown.id, content);
        this.#shown = this.#shown.map((message, at) =>
          at === index ? { id: message.id, content } : message,
        );
      }
    }
  }

  async #finish(text: string): Promise<void> {
    const { pacer, conversation, transport } = this.#options;
    if (this.#timer !== undefined) this.#options.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
    const chunks = toDiscordChunks(text);
    const edits = this.#shown.some((message, index) => message.content !== chunks[index]);
    if (edits) await this.#paced();
    pacer.mark(conversation);
    for (const [index, content] of chunks.entries()) {
      const shown = this.#shown[index];
      if (shown === undefined) {
        const id = await transport.post(content, index === 0);
        this.#shown = [...this.#shown, { id, content }];
        continue;
      }
      if (shown.content === content) continue;
      try {
        await transport.edit(shown.id, content);
        this.#shown = this.#shown.map((message, at) =>
          at === index ? { id: message.id, content } : message,
        );
      } catch (error) {
        await this.#sendRest(index, chunks, error);
        return;
      }
    }
    await this.#removeFrom(chunks.length);
  }

  /** Resolves once the conversation's pace allows an edit (checked again after each wait: replies share it). */
  async #paced(): Promise<void> {
    const { pacer, conversation, timers } = this.#options;
    for (let wait = pacer.waitMs(conversation); wait > 0; wait = pacer.waitMs(conversation)) {
      await new Promise<void>((resolve) => {
        timers.setTimeout(resolve, wait);
      });
    }
  }

  /**
   * The fallback when message `index` cannot be edited: it keeps what it shows (nothing, when it was deleted);
   * the rest of its part and every later part are posted as new messages, and the messages after it, which
   * showed older text the new ones repeat, are deleted.
   */
  async #sendRest(index: number, chunks: readonly string[], error: unknown): Promise<void> {
    const { transport, logger } = this.#options;
    const stale = this.#shown[index] as ShownMessage;
    const gone = error instanceof DiscordApiError && error.status === 404;
    logger.warn(
      { error: error instanceof Error ? error.message : String(error), part: index + 1 },
      "discord streamed reply could not be edited; sending the rest as new messages",
    );
    const part = chunks[index] as string;
    const kept = gone ? "" : stale.content;
    const rest = kept !== "" && part.startsWith(kept) ? part.slice(kept.length).replace(/^\s+/, "") : part;
    await this.#removeFrom(index + 1);
    if (gone) this.#shown = this.#shown.slice(0, index);
    const pieces = [
      ...(rest.trim() === "" ? [] : splitMessage(rest, DISCORD_MESSAGE_LIMIT)),
      ...chunks.slice(index + 1),
    ];
    for (const [at, content] of pieces.entries()) {
      const id = await transport.post(content, gone && index === 0 && at === 0);
      this.#shown = [...this.#shown, { id, content }];
    }
  }

  /** Deletes the messages from `index` on (best effort: one that stays is logged). */
  async #removeFrom(index: number): Promise<void> {
    const extra = this.#shown.slice(index);
    this.#shown = this.#shown.slice(0, index);
    for (const message of extra) {
      await this.#options.transport.remove(message.id).catch((error: unknown) => {
        this.#options.logger.warn(
          { error: error instanceof Error ? error.message : String(error), messageId: message.id },
          "discord streamed reply: a message left over could not be deleted",
        );
      });
    }
  }
}
