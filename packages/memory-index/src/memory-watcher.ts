import * as path from "node:path";
import { describeError, type Logger } from "@almanac/core";
import {
  isInMemoryDirectory,
  isInSharedDirectory,
  isMemoryFilePath,
  MEMORY_FILE,
  toRelativePath,
} from "@almanac/memory-files";
import { watch } from "chokidar";

/** Options of {@link watchMemoryFiles}. */
export interface MemoryWatcherOptions {
  readonly workspace: string;
  /** Quiet time after the last event before the batch is handed over (default 150 ms). */
  readonly debounceMs?: number;
  /** Called with the memory paths that changed (or `"all"` after a directory came or went). */
  readonly onChange: (paths: ReadonlySet<string> | "all") => void;
  readonly logger: Logger;
}

/** A running watch. */
export interface MemoryWatcher {
  /** Whether events are waiting for their debounce to end. */
  pending(): boolean;
  close(): Promise<void>;
}

/**
 * Watches `MEMORY.md`, `memory/**` and the shared chats' logs under `shared/` (created later or not) with chokidar and reports changed paths,
 * debounced. The event type is not trusted: editors save by writing a temporary file and renaming
 * it, or by deleting and re-creating; the consumer re-reads each reported path from disk.
 */
export async function watchMemoryFiles(options: MemoryWatcherOptions): Promise<MemoryWatcher> {
  const workspace = path.resolve(options.workspace);
  const debounceMs = options.debounceMs ?? 150;
  // Under steady writes the batch still goes out after this long.
  const maxWaitMs = debounceMs * 4;
  let changed = new Set<string>();
  let everything = false;
  let timer: NodeJS.Timeout | undefined;
  let firstEventAt: number | undefined;

  const flush = (): void => {
    timer = undefined;
    firstEventAt = undefined;
    const batch = everything ? "all" : changed;
    changed = new Set();
    everything = false;
    options.onChange(batch);
  };

  const schedule = (): void => {
    const now = Date.now();
    firstEventAt ??= now;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(flush, Math.max(0, Math.min(debounceMs, firstEventAt + maxWaitMs - now)));
  };

  const relevant = (absolute: string): boolean => {
    const relative = toRelativePath(workspace, absolute);
    return (
      relative === "" ||
      relative === MEMORY_FILE ||
      isInMemoryDirectory(relative) ||
      isInSharedDirectory(relative)
    );
  };

  const watcher = watch(workspace, {
    ignoreInitial: true,
    followSymlinks: false,
    ignored: (absolute) => !relevant(absolute),
  });
  watcher.on("all", (event, absolute) => {
    const relative = toRelativePath(workspace, absolute);
    if (event === "addDir" || event === "unlinkDir") {
      if (relative !== "") everything = true;
    } else if (isMemoryFilePath(relative)) {
      changed.add(relative);
    } else {
      return;
    }
    schedule();
  });
  // chokidar throttles `change` events (a save shortly after another one, or a rename over a file
  // just changed, can be dropped), so raw file-system events are listened to as well. They only
  // name a path to re-read; duplicates are merged by the debounce.
  watcher.on("raw", (_event, name, details) => {
    const watched =
      typeof details === "object" && details !== null && "watchedPath" in details
        ? details.watchedPath
        : undefined;
    if (typeof watched !== "string" || typeof name !== "string" || name === "") return;
    // A file's own watcher reports its base name; a directory's watcher the name of the entry.
    const relative = toRelativePath(
      workspace,
      path.basename(watched) === name ? watched : path.join(watched, name),
    );
    if (!isMemoryFilePath(relative)) return;
    changed.add(relative);
    schedule();
  });
  watcher.on("error", (error) =>
    options.logger.warn({ error: describeError(error) }, "memory watcher error"),
  );
  await new Promise<void>((resolve) => watcher.once("ready", () => resolve()));

  return {
    pending: () => timer !== undefined,
    async close() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await watcher.close();
    },
  };
}
