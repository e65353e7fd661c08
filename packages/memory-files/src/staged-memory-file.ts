import { UserError } from "@almanac/core";
import type { MemoryFileContent, ShrinkGuard } from "./memory-file-store.js";
import { DEFAULT_SHRINK_GUARD, isDestructiveShrink } from "./memory-file-store.js";

/**
 * A memory file as one summarizer job sees it: the content read at the start plus the job's own
 * edits, which stay here (not on disk) until the job commits them all at once.
 */
export interface StagedMemoryFile {
  readonly path: string;
  /** Hash of the file when it was read; `null` when it did not exist. The commit checks it is unchanged. */
  readonly baseHash: string | null;
  /** The current view: what was read plus the staged edits. */
  content(): string;
  /** True when the staged content differs from the file as read (a missing file counts as its starting text). */
  changed(): boolean;
  /**
   * Stages new content. Throws `UserError` `memory.shrink_refused` when it would drop most of the file
   * as read or of the staged content (the agent sees the refusal and can fix its edit).
   */
  replace(next: string): void;
  /**
   * Puts back content this stage held earlier (from {@link content}), undoing the job's own later edits;
   * no shrink guard, since nothing the file held when read is lost. Used to redo a pass that overflowed.
   */
  restore(earlier: string): void;
}

/** Options of {@link stageMemoryFile}. */
export interface StageOptions {
  /** What a missing file starts as (e.g. its `# YYYY-MM-DD` heading); written only if the job adds to it. */
  readonly initialContent?: string;
  readonly shrinkGuard?: ShrinkGuard;
}

/** Stages a memory file read from the store (`base` undefined when the file does not exist). */
export function stageMemoryFile(
  path: string,
  base: MemoryFileContent | undefined,
  options: StageOptions = {},
): StagedMemoryFile {
  const guard = options.shrinkGuard ?? DEFAULT_SHRINK_GUARD;
  const original = base?.content ?? options.initialContent ?? "";
  let staged = original;
  return {
    path,
    baseHash: base?.hash ?? null,
    content: () => staged,
    changed: () => staged !== original,
    replace(next) {
      for (const previous of [original, staged]) {
        if (isDestructiveShrink(previous, next, guard)) {
          throw new UserError(
            "memory.shrink_refused",
            `Refused: the new content of ${path} (${next.length} characters) would drop most of its ${previous.length} characters. ` +
              "Nothing was changed. Keep every existing entry; use edit_day_log or append_day_log for targeted changes.",
          );
        }
      }
      staged = next;
    },
    restore(earlier) {
      staged = earlier;
    },
  };
}
