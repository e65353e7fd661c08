/**
 * `derive` remembered per frozen object: a backend that keeps chunks between searches (SQLite's chunk cache)
 * freezes them and hands out the same object again, so what scoring and snippets derive from a chunk alone is
 * worked out once; an entry lives exactly as long as its object. An object that is not frozen could change, so
 * it is derived anew every time.
 */
export function memoizeFrozen<Key extends object, Value>(derive: (key: Key) => Value): (key: Key) => Value {
  const known = new WeakMap<Key, Value>();
  return (key) => {
    const frozen = Object.isFrozen(key);
    if (frozen) {
      const value = known.get(key);
      if (value !== undefined) return value;
    }
    const value = derive(key);
    if (frozen) known.set(key, value);
    return value;
  };
}
