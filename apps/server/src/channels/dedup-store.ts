import { appendFile, mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE, writeFileDurably } from "@almanac/durable-write";

/** Remembers delivered event ids across restarts so a platform's redelivery is answered once. */
export interface DedupStore {
  /** Records `id` and returns true when it was not seen within the retention; false for a duplicate. */
  firstSeen(id: string): Promise<boolean>;
  size(): number;
}

/**
 * A dedup store on one append-only file (`state/channel-dedup.jsonl`): each new id is appended and fsynced
 * before the message is handed on, so a crash cannot make a redelivered event look new. On start the file
 * is read, entries older than the retention are dropped and the file is rewritten atomically.
 */
export async function createDedupStore(options: {
  file: string;
  retentionMs: number;
  clock?: () => number;
}): Promise<DedupStore> {
  const clock = options.clock ?? Date.now;
  const seen = new Map<string, number>();
  await mkdir(dirname(options.file), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  try {
    const text = await readFile(options.file, "utf8");
    const cutoff = clock() - options.retentionMs;
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      try {
        const entry: unknown = JSON.parse(line);
        if (typeof entry === "object" && entry !== null && "id" in entry && "at" in entry) {
          const { id, at } = entry as { id: unknown; at: unknown };
          if (typeof id === "string" && typeof at === "number" && at >= cutoff) seen.set(id, at);
        }
      } catch {
        // A line torn by a crash mid-append: skip it.
      }
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  await writeFileDurably(
    options.file,
    [...seen].map(([id, at]) => `${JSON.stringify({ id, at })}\n`).join(""),
  );
  let appends = 0;
  const prune = () => {
    const cutoff = clock() - options.retentionMs;
    for (const [id, at] of seen) if (at < cutoff) seen.delete(id);
  };
  return {
    async firstSeen(id) {
      const now = clock();
      const previous = seen.get(id);
      if (previous !== undefined && previous >= now - options.retentionMs) return false;
      seen.set(id, now);
      await appendFile(options.file, `${JSON.stringify({ id, at: now })}\n`, { mode: PRIVATE_FILE_MODE });
      const handle = await open(options.file, "r");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      appends += 1;
      if (appends % 1000 === 0) prune();
      return true;
    },
    size: () => seen.size,
  };
}
