/**
 * Runs `run(key)` for callers in groups, per key: a call made while no run of its key is going starts one; a
 * call made while one runs waits for it and then for one more run, which every call made meanwhile shares.
 * Each caller gets the result of a run that started after it called, so it sees every change made before its
 * call (a run already going may have read the state too early), and N calls at once cost two runs, not N.
 *
 * For work whose result depends only on the key and on the state of the world when it starts: a directory's
 * fsync (`fsyncDirectory` of `@almanac/durable-write`), the stat checks of a memory excerpt (memory's
 * `memoryContext`). A rejected run rejects its whole group; the next call starts afresh.
 */
export function groupCalls<K, T>(run: (key: K) => Promise<T>): (key: K) => Promise<T> {
  const groups = new Map<K, { running: Promise<T> | undefined; next: Promise<T> | undefined }>();
  return (key) => {
    let group = groups.get(key);
    if (group === undefined) {
      group = { running: undefined, next: undefined };
      groups.set(key, group);
    }
    const current = group;
    if (current.next !== undefined) return current.next;
    const start = (): Promise<T> => {
      const running = run(key).finally(() => {
        current.running = undefined;
        if (current.next === undefined && groups.get(key) === current) groups.delete(key);
      });
      current.running = running;
      return running;
    };
    if (current.running === undefined) return start();
    const next = current.running
      .catch(() => {})
      .then(() => {
        current.next = undefined;
        return start();
      });
    current.next = next;
    return next;
  };
}
