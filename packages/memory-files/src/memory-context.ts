import type { TokenCounter } from "@almanac/core";
import { localDateOf, previousDate } from "./local-date.js";
import type { MemoryFileContent } from "./memory-file-store.js";
import { dailyLogPath, type MemoryScope, OWNER_SCOPE, sharedScopePrefix } from "./memory-scope.js";

/**
 * The system-prompt section (our own words) that tells the chat agent how to use its long-term
 * memory: when to look things up and how to record what the person asks it to remember.
 */
export const MEMORY_GUIDE = `## Your memory
You remember across conversations through Markdown files in your workspace:
- MEMORY.md holds long-term knowledge: who the person is, their preferences, standing instructions, decisions, ongoing projects, people and places that matter.
- memory/YYYY-MM-DD.md are daily logs of what happened each day. They are written for you after conversations are summarized; you rarely need to edit them.
Excerpts of MEMORY.md and of today's and yesterday's logs follow below. An excerpt that was cut says so.

Looking things up:
- Before you answer anything that depends on the past (an earlier conversation, a decision, a name, a date, "last time", "what did we decide"), search with memory_search and open the useful hits with memory_get.
- When the excerpt of MEMORY.md was cut and the question may concern it, read the whole file with read_file.
- Each hit shows its date. When two hits disagree, the newer one is current (a fact that changed); say so if it matters.
- Do not guess about the past. If the memory does not say, tell the person you do not know.

Writing to MEMORY.md:
- When the person asks you to remember something ("remember that...", "note that...", "from now on..."), or states a lasting preference or decision, record it in MEMORY.md right away with the file tools, then confirm briefly.
- Read the file first. Put one fact per bullet under the heading it belongs to; add a short heading when none fits.
- Never add a fact that is already there. When a fact changed, edit its bullet instead of adding a contradicting one; add the date when it helps ("since 2024-05-01").
- Keep exact identifiers verbatim: paths, URLs, ids, numbers, names.
- Change only what needs changing with edit_file or append_file; never rewrite the whole file to add a line.
- When asked to forget something, use memory_forget (it removes it from MEMORY.md and every daily log and keeps it from coming back), and say what was removed. Never store passwords, API keys or other secrets.
- Day-to-day events belong in the daily logs, not in MEMORY.md.`;

/**
 * The memory section for a shared chat (a group, or a direct chat with someone who is not the owner):
 * it has its own log and no access to the owner's private memory, and says so, so the model does not
 * promise what the code will not let it do.
 */
export function sharedMemoryGuide(scope: Extract<MemoryScope, { kind: "shared" }>): string {
  const folder = sharedScopePrefix(scope);
  return `## Your memory in this chat
This is a shared chat (${scope.id}): several people may read what you write here. It has a memory of its own, kept apart from the owner's private memory:
- ${folder}YYYY-MM-DD.md are this chat's daily logs. They are written for you after this chat's conversations are summarized; you cannot edit them.
- You cannot read or change the owner's private memory (MEMORY.md and the daily logs in memory/) from here, and you have no file tools in this chat. Do not claim to know what it says.
Excerpts of this chat's logs for today and yesterday follow below. An excerpt that was cut says so.

Looking things up:
- Before you answer anything that depends on earlier conversations in this chat, search with memory_search and open the useful hits with memory_get. They cover this chat's log only.
- Do not guess about the past. If this chat's log does not say, tell the people you do not know.

When someone asks you to remember something here ("remember that..."): say that it will be kept in this chat's own log when the conversation is summarized, and that you cannot store it in the owner's private memory from a shared chat. Never store passwords, API keys or other secrets.`;
}

/** The memory section of a session's system prompt for its scope: {@link MEMORY_GUIDE} or {@link sharedMemoryGuide}. */
export function memoryGuideFor(scope: MemoryScope): string {
  return scope.kind === "owner" ? MEMORY_GUIDE : sharedMemoryGuide(scope);
}

/** Reads memory files; a `MemoryFileStore` is one. */
export interface MemoryFileReader {
  tryRead(relativePath: string): Promise<MemoryFileContent | undefined>;
}

/** Options of {@link buildMemoryContext}. */
export interface MemoryContextOptions {
  readonly store: MemoryFileReader;
  /** IANA zone deciding what "today" is. */
  readonly timeZone: string;
  /** Milliseconds since the epoch. */
  readonly now: number;
  /** Tokens for the three excerpts together (headings and notes come on top, a few dozen tokens). Default 2000. */
  readonly budgetTokens?: number;
  /**
   * The budget the operator configured, when `budgetTokens` is smaller because the model's window leaves no
   * more room: the excerpt then says so, so the model knows to read the files.
   */
  readonly configuredTokens?: number;
  readonly tokenCounter: TokenCounter;
  /**
   * Whose memory the excerpt shows (default the owner's: MEMORY.md and the owner's daily logs). A shared
   * chat sees only its own logs of today and yesterday, never MEMORY.md.
   */
  readonly scope?: MemoryScope;
}

interface Section {
  readonly path: string;
  readonly title: string;
  /** Long-term memory is read from the top; daily logs from the end (the latest entries matter most). */
  readonly keep: "head" | "tail";
  readonly missing: string;
  readonly share: number;
}

/** Splits `budget` by shares, then hands what a small file does not need to the others, in order. */
function allocate(budget: number, shares: readonly number[], needs: readonly number[]): number[] {
  const given = shares.map((share, index) => Math.min(Math.floor(budget * share), needs[index] ?? 0));
  let spare = budget - given.reduce((sum, value) => sum + value, 0);
  for (const [index, need] of needs.entries()) {
    const extra = Math.min(spare, need - (given[index] ?? 0));
    if (extra > 0) {
      given[index] = (given[index] ?? 0) + extra;
      spare -= extra;
    }
  }
  return given;
}

function splitLines(content: string): string[] {
  const lines = content.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** The lines that fit in `budget` tokens, from the head or the tail, and how many were left out. */
function excerpt(lines: readonly string[], budget: number, keep: "head" | "tail", counter: TokenCounter) {
  const ordered = keep === "head" ? lines : [...lines].reverse();
  const kept: string[] = [];
  let used = 0;
  for (const line of ordered) {
    const cost = counter.countText(`${line}\n`);
    if (used + cost > budget) break;
    kept.push(line);
    used += cost;
  }
  if (keep === "tail") kept.reverse();
  return { kept, omitted: lines.length - kept.length };
}

function sharedSections(scope: MemoryScope, today: string, yesterday: string): Section[] {
  const todayPath = dailyLogPath(scope, today);
  const yesterdayPath = dailyLogPath(scope, yesterday);
  return [
    {
      path: todayPath,
      title: `${todayPath} (this chat, today)`,
      keep: "tail",
      missing: "No log of this chat for today yet.",
      share: 0.6,
    },
    {
      path: yesterdayPath,
      title: `${yesterdayPath} (this chat, yesterday)`,
      keep: "tail",
      missing: "No log of this chat for yesterday.",
      share: 0.4,
    },
  ];
}

/** The files a memory context of `scope` at `now` is made of (workspace-relative), in section order. */
export function memoryContextFiles(scope: MemoryScope, now: number, timeZone: string): string[] {
  return sectionsAt(scope, now, timeZone).map((section) => section.path);
}

function sectionsAt(scope: MemoryScope, now: number, timeZone: string): Section[] {
  const today = localDateOf(now, timeZone);
  const yesterday = previousDate(today);
  return scope.kind === "shared"
    ? sharedSections(scope, today, yesterday)
    : [
        {
          path: "MEMORY.md",
          title: "MEMORY.md (long-term)",
          keep: "head",
          missing: "MEMORY.md does not exist yet.",
          share: 0.5,
        },
        {
          path: `memory/${today}.md`,
          title: `memory/${today}.md (today)`,
          keep: "tail",
          missing: "No log for today yet.",
          share: 0.3,
        },
        {
          path: `memory/${yesterday}.md`,
          title: `memory/${yesterday}.md (yesterday)`,
          keep: "tail",
          missing: "No log for yesterday.",
          share: 0.2,
        },
      ];
}

/**
 * Builds the memory part of the system prompt: bounded excerpts of `MEMORY.md` and of today's and
 * yesterday's daily logs. Whatever is cut is stated in the text with the file to read, never silently.
 */
export async function buildMemoryContext(options: MemoryContextOptions): Promise<string> {
  const { store, timeZone, now, tokenCounter } = options;
  const budget = Math.max(0, Math.floor(options.budgetTokens ?? 2000));
  const scope = options.scope ?? OWNER_SCOPE;
  const today = localDateOf(now, timeZone);
  const sections = sectionsAt(scope, now, timeZone);
  const files = await Promise.all(sections.map((section) => store.tryRead(section.path)));
  const lines = files.map((file) => (file === undefined ? [] : splitLines(file.content)));
  const needs = lines.map((fileLines) =>
    fileLines.reduce((sum, line) => sum + tokenCounter.countText(`${line}\n`), 0),
  );
  const allowances = allocate(
    budget,
    sections.map((section) => section.share),
    needs,
  );

  const parts = [`## Memory excerpts (today is ${today}, ${timeZone})`];
  if (options.configuredTokens !== undefined && options.configuredTokens > budget) {
    parts.push(
      `The excerpts are limited to ${budget} tokens (configured: ${options.configuredTokens}) so that the model's context window keeps room for the conversation.`,
    );
  }
  for (const [index, section] of sections.entries()) {
    parts.push("", `### ${section.title}`);
    const fileLines = lines[index] ?? [];
    if (files[index] === undefined || fileLines.length === 0) {
      parts.push(files[index] === undefined ? section.missing : `${section.path} is empty.`);
      continue;
    }
    const { kept, omitted } = excerpt(fileLines, allowances[index] ?? 0, section.keep, tokenCounter);
    const note =
      omitted === 0
        ? undefined
        : `... ${omitted} ${section.keep === "head" ? "more" : "earlier"} ${omitted === 1 ? "line" : "lines"} not shown; read ${section.path} with ${scope.kind === "owner" ? "read_file" : "memory_get"}.`;
    if (section.keep === "tail" && note !== undefined) parts.push(note);
    parts.push(...kept);
    if (section.keep === "head" && note !== undefined) parts.push(note);
  }
  return parts.join("\n");
}
