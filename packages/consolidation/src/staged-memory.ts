import { type TokenCounter, UserError } from "@almanac/core";
import {
  DEFAULT_SHRINK_GUARD,
  isDestructiveShrink,
  MEMORY_DIRECTORY,
  MEMORY_FILE,
  type MemoryFileContent,
  type MemoryFileStore,
  type ShrinkGuard,
} from "@almanac/memory-files";

/** Where topic files live: `memory/topics/<slug>.md`, memory files the index searches like any other. */
export const TOPIC_DIRECTORY = `${MEMORY_DIRECTORY}/topics`;

/** What a missing MEMORY.md starts as (written only if a run adds to it). */
const MEMORY_START = "# Memory\n";

/** Longest topic slug, in characters (at most 4 bytes each: within the store's 200-byte names with `.md`). */
const MAX_SLUG = 48;

/**
 * The file name of a topic: lower-case letters and digits of any script, joined by `-` (`Work projects` →
 * `work-projects`). `undefined` when nothing usable is left.
 */
export function topicSlug(topic: string): string | undefined {
  const words = topic
    .normalize("NFKC")
    .toLocaleLowerCase()
    .match(/[\p{L}\p{N}]+/gu);
  if (words === null) return undefined;
  const slug = words.join("-").slice(0, MAX_SLUG).replace(/-+$/, "");
  return slug === "" ? undefined : slug;
}

/** The workspace-relative path of a topic file. */
export function topicPath(slug: string): string {
  return `${TOPIC_DIRECTORY}/${slug}.md`;
}

/** Tokens of a Markdown text counted as the memory excerpt counts them: line by line, each with its break. */
export function countMemoryTokens(counter: TokenCounter, content: string): number {
  const lines = content.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.reduce((sum, line) => sum + counter.countText(`${line}\n`), 0);
}

/** One file of the stage. */
interface StagedFile {
  readonly base: MemoryFileContent | undefined;
  /** What the file starts as: its content as read, or the starting text of a missing file. */
  readonly original: string;
  staged: string;
}

/** A staged file that differs from what was read, ready for a commit record. */
export interface ChangedFile {
  readonly path: string;
  /** Hash of the file when it was read; `null` when it did not exist. */
  readonly baseHash: string | null;
  readonly original: string;
  readonly content: string;
}

/**
 * MEMORY.md and the topic files one run touches, as read plus the run's edits: nothing reaches the disk until
 * the run commits. The shrink guard applies to the set as a whole, so moving a section from MEMORY.md to a
 * topic file is fine while losing most of what the files held is refused.
 */
export class StagedMemory {
  readonly #store: MemoryFileStore;
  readonly #guard: ShrinkGuard;
  readonly #files = new Map<string, StagedFile>();
  readonly #memory: StagedFile;

  private constructor(store: MemoryFileStore, guard: ShrinkGuard, memory: StagedFile) {
    this.#store = store;
    this.#guard = guard;
    this.#memory = memory;
    this.#files.set(MEMORY_FILE, memory);
  }

  /** Reads MEMORY.md (missing: it starts as a `# Memory` heading) into a new stage. */
  static async open(
    store: MemoryFileStore,
    guard: ShrinkGuard = DEFAULT_SHRINK_GUARD,
  ): Promise<StagedMemory> {
    const base = await store.tryRead(MEMORY_FILE);
    const original = base?.content ?? MEMORY_START;
    return new StagedMemory(store, guard, { base, original, staged: original });
  }

  /** MEMORY.md as staged. */
  memory(): string {
    return this.#memory.staged;
  }

  /** A topic file as staged (`""` when it does not exist yet), read from the store the first time. */
  async topic(path: string): Promise<string> {
    return (await this.#load(path, "")).staged;
  }

  /** Stages MEMORY.md. Throws `memory.shrink_refused` when the files together would lose most of their text. */
  replaceMemory(next: string): void {
    this.#replace(new Map([[MEMORY_FILE, next]]));
  }

  /** Stages MEMORY.md and a topic file in one step (a section moved from one to the other). */
  async replaceBoth(
    memory: string,
    topic: { readonly path: string; readonly content: string },
  ): Promise<void> {
    await this.#load(topic.path, "");
    this.#replace(
      new Map([
        [topic.path, topic.content],
        [MEMORY_FILE, memory],
      ]),
    );
  }

  /** The files that differ from what was read: topic files first, MEMORY.md last (the order they are written in). */
  changedFiles(): ChangedFile[] {
    const changed: ChangedFile[] = [];
    for (const [path, file] of this.#files) {
      if (file.staged === file.original) continue;
      changed.push({
        path,
        baseHash: file.base?.hash ?? null,
        original: file.original,
        content: file.staged,
      });
    }
    return changed.sort((left, right) =>
      left.path === MEMORY_FILE ? 1 : right.path === MEMORY_FILE ? -1 : left.path.localeCompare(right.path),
    );
  }

  #replace(next: ReadonlyMap<string, string>): void {
    const originals: string[] = [];
    const before: string[] = [];
    const after: string[] = [];
    for (const [path, file] of this.#files) {
      originals.push(file.original);
      before.push(file.staged);
      after.push(next.get(path) ?? file.staged);
    }
    for (const previous of [originals.join("\n"), before.join("\n")]) {
      if (isDestructiveShrink(previous, after.join("\n"), this.#guard)) {
        throw new UserError(
          "memory.shrink_refused",
          "Refused: that would drop most of what MEMORY.md and its topic files hold. Nothing was changed. " +
            "Keep every fact; remove only duplicates and outdated values, and move detail with move_section_to_topic.",
        );
      }
    }
    // Every path of `next` was loaded before (MEMORY.md at open, a topic file by the caller).
    for (const [path, file] of this.#files) file.staged = next.get(path) ?? file.staged;
  }

  async #load(path: string, start: string): Promise<StagedFile> {
    const known = this.#files.get(path);
    if (known !== undefined) return known;
    const base = await this.#store.tryRead(path);
    const original = base?.content ?? start;
    const file: StagedFile = { base, original, staged: original };
    this.#files.set(path, file);
    return file;
  }
}
