/** Runs async work one at a time per key; work on different keys runs freely. */
export interface KeyedMutex {
  /** Runs `work` after every earlier `run` of the same key has settled; its outcome is passed through. */
  run<T>(key: string, work: () => Promise<T>): Promise<T>;
  /** Number of keys with work pending or running (keys are forgotten once idle). */
  readonly size: number;
}

/**
 * Creates a per-key mutex: a promise chain per key, dropped when the key goes idle so that
 * millions of keys seen over time cost no memory.
 */
export function createKeyedMutex(): KeyedMutex {
  const tails = new Map<string, Promise<void>>();
  return {
    run<T>(key: string, work: () => Promise<T>): Promise<T> {
      const previous = tails.get(key) ?? Promise.resolve();
      const result = previous.then(work);
      const tail = result.then(
        () => {},
        () => {},
      );
      tails.set(key, tail);
      void tail.then(() => {
        if (tails.get(key) === tail) tails.delete(key);
      });
      return result;
    },
    get size() {
      return tails.size;
    },
  };
}
