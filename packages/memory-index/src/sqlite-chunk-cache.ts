import type { StoredChunk } from "./types.js";

/**
 * Chunks a search has read, by rowid, kept until the index changes. Reading a search's candidates back from
 * SQLite turned hundreds of column values a query into JS strings (a fifth of a search); a chunk read once is
 * served from here until its row is deleted. The backend drops the rows it deletes
 * (a file's chunks are deleted and inserted anew when it changes) and clears it all when another connection has
 * written the file (`PRAGMA data_version`).
 */
export interface ChunkCache {
  /** The chunk stored at `rowid`, if it was read since the last {@link ChunkCache.clear}. */
  get(rowid: number): StoredChunk | undefined;
  /** Keeps `chunk` (frozen: every search shares it); the least recently used ones go past the size bound. */
  set(rowid: number, chunk: StoredChunk): StoredChunk;
  /** Forgets the chunk at `rowid` (its row is being deleted: SQLite reuses rowids). */
  delete(rowid: number): void;
  /** Forgets every chunk. */
  clear(): void;
  /** Chunks held, for tests. */
  readonly size: number;
}

/**
 * Creates a {@link ChunkCache} holding chunks whose texts add up to at most `maxCharacters` (one chunk larger
 * than that is not kept). The bound counts the chunk's text only; scoring keeps a normalised copy beside each
 * chunk it sees (`hybrid-score.ts`), so the memory held is about twice the bound.
 */
export function createChunkCache(maxCharacters: number): ChunkCache {
  // A Map iterates in insertion order: re-inserting on a hit keeps the least recently used first.
  const chunks = new Map<number, StoredChunk>();
  let characters = 0;
  return {
    get(rowid) {
      const chunk = chunks.get(rowid);
      if (chunk !== undefined) {
        chunks.delete(rowid);
        chunks.set(rowid, chunk);
      }
      return chunk;
    },
    set(rowid, chunk) {
      Object.freeze(chunk.headings);
      const frozen = Object.freeze(chunk);
      const size = chunk.text.length;
      if (size > maxCharacters) return frozen;
      const previous = chunks.get(rowid);
      if (previous !== undefined) {
        chunks.delete(rowid);
        characters -= previous.text.length;
      }
      for (const [oldest, evicted] of chunks) {
        if (characters + size <= maxCharacters) break;
        chunks.delete(oldest);
        characters -= evicted.text.length;
      }
      chunks.set(rowid, frozen);
      characters += size;
      return frozen;
    },
    delete(rowid) {
      const chunk = chunks.get(rowid);
      if (chunk === undefined) return;
      chunks.delete(rowid);
      characters -= chunk.text.length;
    },
    clear() {
      chunks.clear();
      characters = 0;
    },
    get size() {
      return chunks.size;
    },
  };
}
