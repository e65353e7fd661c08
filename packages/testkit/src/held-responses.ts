/**
 * The answer to one message-create request of a fake platform, held back: as when the bot dies between the
 * platform creating the message and hearing so (a crash test's window).
 */
export interface HeldResponse<Sent> {
  /** Resolves with the message once the fake created it and is holding back the answer. */
  readonly message: Promise<Sent>;
  /** Sends the held answer (nothing is sent when the client is gone); before a request was caught, cancels the hold. */
  release(): void;
}

interface Hold<Sent> {
  readonly caught: (message: Sent) => void;
  readonly released: Promise<void>;
  readonly release: () => void;
}

/** The holds a fake's REST half keeps: asked for by a test, taken by the next message it creates. */
export class ResponseHolds<Sent> {
  readonly #pending: Hold<Sent>[] = [];
  readonly #open = new Set<Hold<Sent>>();

  /** Holds the answer to the next message created. */
  holdNext(): HeldResponse<Sent> {
    let caught: (message: Sent) => void = () => {};
    const message = new Promise<Sent>((resolve) => {
      caught = resolve;
    });
    let resolveReleased: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      resolveReleased = resolve;
    });
    const hold: Hold<Sent> = {
      caught,
      released,
      release: () => {
        const index = this.#pending.indexOf(hold);
        if (index >= 0) this.#pending.splice(index, 1);
        this.#open.delete(hold);
        resolveReleased();
      },
    };
    this.#pending.push(hold);
    this.#open.add(hold);
    return { message, release: hold.release };
  }

  /** For a message just created: what its answer waits for, when a hold was asked for; else undefined. */
  take(sent: Sent): Promise<void> | undefined {
    const hold = this.#pending.shift();
    if (hold === undefined) return undefined;
    hold.caught(sent);
    return hold.released;
  }

  /** Releases every hold (the fake closing). */
  releaseAll(): void {
    for (const hold of [...this.#open]) hold.release();
  }
}
