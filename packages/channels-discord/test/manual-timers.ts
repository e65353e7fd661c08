import type { DiscordTimers } from "../src/types.js";

/**
 * A clock and timers that move only when the test says: `now` for the adapter's `clock`, the object itself for
 * its `timers`. Advancing fires each due timer at its own time, in order.
 */
export class ManualTimers implements DiscordTimers {
  #now: number;
  #nextId = 1;
  readonly #timers = new Map<number, { readonly at: number; readonly callback: () => void }>();

  constructor(start: number) {
    this.#now = start;
  }

  /** The current time, in milliseconds since the epoch. */
  readonly now = (): number => this.#now;

  setTimeout(callback: () => void, delayMs: number): unknown {
    const id = this.#nextId;
    this.#nextId += 1;
    this.#timers.set(id, { at: this.#now + Math.max(0, delayMs), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers set and not yet fired or cleared. */
  pending(): number {
    return this.#timers.size;
  }

  /** Moves the clock forward by `ms`, firing every timer due on the way at its own time; returns how many fired. */
  advance(ms: number): number {
    const end = this.#now + ms;
    let fired = 0;
    for (;;) {
      const due = [...this.#timers.entries()]
        .filter(([, timer]) => timer.at <= end)
        .sort(([, left], [, right]) => left.at - right.at)[0];
      if (due === undefined) break;
      const [id, timer] = due;
      this.#timers.delete(id);
      this.#now = Math.max(this.#now, timer.at);
      timer.callback();
      fired += 1;
    }
    this.#now = end;
    return fired;
  }
}
