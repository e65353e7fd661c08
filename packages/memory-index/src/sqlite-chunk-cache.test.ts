import { describe, expect, it } from "vitest";
import { createChunkCache } from "./sqlite-chunk-cache.js";
import type { StoredChunk } from "./types.js";

function chunk(text: string): StoredChunk {
  return {
    id: `id-${text}`,
    path: "MEMORY.md",
    startLine: 1,
    endLine: 1,
    headings: ["Memory"],
    text,
    hash: "h",
    source: "memory",
    updatedAt: 0,
  };
}

describe("createChunkCache", () => {
  it("keeps chunks until cleared, frozen, since every search shares them", () => {
    const cache = createChunkCache(100);
    const kept = cache.set(1, chunk("otters"));
    expect(cache.get(1)).toBe(kept);
    expect(Object.isFrozen(kept)).toBe(true);
    expect(Object.isFrozen(kept.headings)).toBe(true);
    cache.clear();
    expect(cache.get(1)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("forgets one chunk, and counts its text as gone", () => {
    const cache = createChunkCache(8);
    cache.set(1, chunk("aaaa"));
    cache.set(2, chunk("bbbb"));
    cache.delete(1);
    expect(cache.get(1)).toBeUndefined();
    cache.set(3, chunk("cccc"));
    expect(cache.get(2)?.text).toBe("bbbb");
    expect(cache.size).toBe(2);
  });

  it("drops the least recently used chunks when their texts exceed the bound", () => {
    const cache = createChunkCache(10);
    cache.set(1, chunk("aaaa"));
    cache.set(2, chunk("bbbb"));
    cache.get(1);
    cache.set(3, chunk("cccc"));
    expect(cache.get(2)).toBeUndefined();
    expect(cache.get(1)?.text).toBe("aaaa");
    expect(cache.get(3)?.text).toBe("cccc");
    cache.set(3, chunk("dddddddd"));
    expect(cache.get(1)).toBeUndefined();
    expect(cache.get(3)?.text).toBe("dddddddd");
  });

  it("does not keep a chunk larger than the bound, nor anything at a bound of 0", () => {
    const cache = createChunkCache(3);
    expect(cache.set(1, chunk("otters")).text).toBe("otters");
    expect(cache.get(1)).toBeUndefined();
    const none = createChunkCache(0);
    none.set(1, chunk("x"));
    expect(none.get(1)).toBeUndefined();
  });
});
