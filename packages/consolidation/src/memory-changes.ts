import { MEMORY_FILE } from "@almanac/memory-files";
import { linesOf } from "./markdown-sections.js";

/** A file a run changes: as read and as committed. */
export interface FileChange {
  readonly path: string;
  readonly original: string;
  readonly content: string;
}

/** One run of removed and added lines between unchanged ones. */
interface Hunk {
  readonly removed: string[];
  readonly added: string[];
}

/** Largest line-count product diffed exactly; beyond it a file's change is reported as one block. */
const MAX_DIFF_CELLS = 4_000_000;
/** Longest quoted line in a change's description. */
const MAX_QUOTE = 160;

/** The hunks turning `before` into `after`, from a longest common subsequence of their lines. */
function diffLines(before: readonly string[], after: readonly string[]): Hunk[] {
  if (before.length * after.length > MAX_DIFF_CELLS) {
    const kept = new Set(after);
    const had = new Set(before);
    return [
      {
        removed: before.filter((line) => !kept.has(line)),
        added: after.filter((line) => !had.has(line)),
      },
    ];
  }
  const width = after.length + 1;
  // common[i * width + j]: length of the longest common subsequence of before[i..] and after[j..].
  const common = new Uint32Array((before.length + 1) * width);
  for (let i = before.length - 1; i >= 0; i -= 1) {
    for (let j = after.length - 1; j >= 0; j -= 1) {
      common[i * width + j] =
        before[i] === after[j]
          ? (common[(i + 1) * width + j + 1] ?? 0) + 1
          : Math.max(common[(i + 1) * width + j] ?? 0, common[i * width + j + 1] ?? 0);
    }
  }
  const hunks: Hunk[] = [];
  let current: Hunk = { removed: [], added: [] };
  const close = () => {
    if (current.removed.length + current.added.length > 0) hunks.push(current);
    current = { removed: [], added: [] };
  };
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    if (i < before.length && j < after.length && before[i] === after[j]) {
      close();
      i += 1;
      j += 1;
    } else if (
      j >= after.length ||
      (i < before.length && (common[(i + 1) * width + j] ?? 0) >= (common[i * width + j + 1] ?? 0))
    ) {
      current.removed.push(before[i] ?? "");
      i += 1;
    } else {
      current.added.push(after[j] ?? "");
      j += 1;
    }
  }
  close();
  return hunks;
}

function quote(lines: readonly string[]): string {
  return lines
    .map((line) => {
      const text = line.replace(/^\s*[-*]\s+/, "").trim();
      return `"${text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE - 1)}…` : text}"`;
    })
    .join(", ");
}

const meaningful = (line: string) => line.trim() !== "";

/**
 * What a run changed, one sentence per change, as the day's log and the run's history record it: facts added,
 * removed or replaced in MEMORY.md, and sections moved to topic files (told once, as a move).
 */
export function describeChanges(
  files: readonly FileChange[],
  isPointer: (line: string) => boolean,
): string[] {
  const topics = files.filter((file) => file.path !== MEMORY_FILE);
  const movedLines = new Set<string>();
  const changes: string[] = [];
  for (const topic of topics) {
    const added = diffLines(linesOf(topic.original), linesOf(topic.content))
      .flatMap((hunk) => hunk.added)
      // A new topic file's `# title` is not something that moved.
      .filter((line) => meaningful(line) && !/^#\s/.test(line));
    for (const line of added) movedLines.add(line);
    const heading = added.find((line) => /^#{2,6}\s/.test(line)) ?? added[0];
    if (heading === undefined) continue;
    const more = added.length - 1;
    changes.push(
      `moved ${quote([heading.replace(/^#+\s*/, "")])}${more > 0 ? ` (${more} more ${more === 1 ? "line" : "lines"})` : ""} to ${topic.path}`,
    );
  }
  const memory = files.find((file) => file.path === MEMORY_FILE);
  if (memory === undefined) return changes;
  const own: string[] = [];
  for (const hunk of diffLines(linesOf(memory.original), linesOf(memory.content))) {
    const removed = hunk.removed.filter((line) => meaningful(line) && !movedLines.has(line));
    const added = hunk.added.filter((line) => meaningful(line) && !isPointer(line));
    if (removed.length > 0 && added.length > 0) own.push(`replaced ${quote(removed)} with ${quote(added)}`);
    else if (removed.length > 0) own.push(`removed ${quote(removed)}`);
    else if (added.length > 0) own.push(`added ${quote(added)}`);
  }
  return [...own, ...changes];
}
