/**
 * When each conversation's streamed reply may next be edited: at most once per `intervalMs` per Discord channel,
 * shared by every reply streaming there (Discord's edit rate limit is per channel, about five in five seconds).
 */
export class EditPacer {
  readonly #intervalMs: number;
  readonly #clock: () => number;
  /** Channel → when its last edit went out; channels whose pace has passed are forgotten. */
  readonly #last = new Map<string, number>();

  constructor(intervalMs: number, clock: () => number) {
    this.#intervalMs = intervalMs;
    this.#clock = clock;
  }

  /** Milliseconds until the conversation may be edited again (0: now). */
  waitMs(conversation: string): number {
    const last = this.#last.get(conversation);
    return last === undefined ? 0 : Math.max(0, last + this.#intervalMs - this.#clock());
  }

  /** Records that the conversation's reply is being posted or edited now. */
  mark(conversation: string): void {
    const now = this.#clock();
    for (const [key, at] of this.#last) {
      if (now - at >= this.#intervalMs) this.#last.delete(key);
    }
    this.#last.set(conversation, now);
  }
}
