import { createHash } from "node:crypto";
import { appendFileSync } from "node:fs";
import { appendFile, readdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describeError, type Logger } from "@almanac/core";
import { makeDirectoryIn, PRIVATE_FILE_MODE } from "@almanac/durable-write";
import { localDateOf } from "@almanac/memory-files";
import { z } from "zod";
import { readTextIfExists } from "../sessions/file-helpers.js";

/** One completed turn of a session, as the charts show it. */
export interface TurnRecord {
  readonly sessionKey: string;
  /** The session's completed turns, this one included (a reset starts over at 1). */
  readonly turn: number;
  /** When the turn ended (ms since the epoch). */
  readonly at: number;
  /** Tokens of the session's next request after the turn: the meter `/status` and the context bar show. */
  readonly contextTokens: number;
  /** Tokens the provider reported for the turn's model calls, summed. */
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** A committed compaction of a session's context. */
export interface CompactionRecord {
  readonly sessionKey: string;
  readonly at: number;
  /** `auto`, `command` (`/compact`) or `overflow` (the provider said the prompt was too long). */
  readonly reason: string;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

/** One day's sample of the memory index. */
export interface MemorySample {
  /** Local date (the memory time zone), `YYYY-MM-DD`. */
  readonly date: string;
  readonly at: number;
  readonly files: number;
  readonly chunks: number;
  readonly embeddedChunks?: number;
}

/** Tokens one model used on one day. */
export interface ModelDayUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Model calls that reported usage. */
  readonly calls: number;
}

/** A day of model usage: every model that was called, by name. */
export interface UsageDay {
  readonly date: string;
  readonly models: Readonly<Record<string, ModelDayUsage>>;
}

/**
 * What the server records for its charts, under `<home>/state/stats/`: model usage per day, each session's
 * turns and compactions, and a daily sample of the memory index. Append-only JSON lines, one append at a time
 * per file (not fsynced); a torn last line (a crash mid-append) is skipped on read. Recording never fails the
 * caller: a write error is logged and the point is lost.
 */
export interface StatsJournal {
  /** Records one model call's usage (every model: chat, compaction, summarizer). */
  recordUsage(model: string, usage: { promptTokens: number; completionTokens: number }): void;
  recordTurn(record: TurnRecord): void;
  recordCompaction(record: CompactionRecord): void;
  /** A reset or delete: the session's history starts over after it. */
  recordReset(sessionKey: string): void;
  /** Appends a memory sample unless the last one of the same day had the same numbers. */
  sampleMemory(sample: Omit<MemorySample, "date" | "at">): Promise<void>;
  /** The last `days` local days, oldest first (days without usage included, with no models). */
  usageByDay(days: number): Promise<UsageDay[]>;
  /** The session's turns and compactions since its last reset (or since it began), oldest first. */
  sessionHistory(sessionKey: string): Promise<{ turns: TurnRecord[]; compactions: CompactionRecord[] }>;
  /** The last sample of each of the last `days` local days that has one, oldest first. */
  memorySamples(days: number): Promise<MemorySample[]>;
  /** Resolves when every record handed in so far is written (for shutdown and tests). */
  flush(): Promise<void>;
}

/** Options of {@link createStatsJournal}. */
export interface StatsJournalOptions {
  /** The directory to write to (`<home>/state/stats`). */
  readonly dir: string;
  /** The time zone days are counted in (the memory time zone, as the daily logs). */
  readonly timeZone: string;
  readonly logger: Logger;
  readonly clock?: () => number;
}

const count = z.number().int().nonnegative();
const usageLine = z.object({ at: count, model: z.string(), promptTokens: count, completionTokens: count });
const turnLine = z.object({
  type: z.literal("turn"),
  sessionKey: z.string(),
  turn: count,
  at: count,
  contextTokens: count,
  promptTokens: count,
  completionTokens: count,
});
const compactionLine = z.object({
  type: z.literal("compaction"),
  sessionKey: z.string(),
  at: count,
  reason: z.string(),
  tokensBefore: count,
  tokensAfter: count,
});
const resetLine = z.object({ type: z.literal("reset"), sessionKey: z.string(), at: count });
const sessionLine = z.discriminatedUnion("type", [turnLine, compactionLine, resetLine]);
const memoryLine = z.object({
  date: z.string(),
  at: count,
  files: count,
  chunks: count,
  embeddedChunks: count.optional(),
});

/** Parses the lines of a JSON-lines file with `schema`, skipping lines that are torn or of another shape. */
function parseLines<T>(text: string | undefined, schema: z.ZodType<T>): T[] {
  if (text === undefined) return [];
  const parsed: T[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const result = schema.safeParse(value);
    if (result.success) parsed.push(result.data);
  }
  return parsed;
}

/** A parsed line without its `type` tag. */
function recordOf<T extends { type: string }>(line: T): Omit<T, "type"> {
  const { type: _type, ...record } = line;
  return record;
}

/** The `days` local dates (in `timeZone`) ending with the one of `now`, oldest first. */
export function lastLocalDates(days: number, now: number, timeZone: string): string[] {
  const dates: string[] = [];
  // Walk back in 12-hour steps so every local date is hit once, whatever the zone's offset or DST.
  for (let at = now; dates.length < days; at -= 12 * 3_600_000) {
    const date = localDateOf(at, timeZone);
    if (dates.at(-1) !== date) dates.push(date);
  }
  return dates.reverse();
}

/** A file name for a session key: keys may hold any character, so the name is its hash. */
function sessionFile(dir: string, sessionKey: string): string {
  return join(dir, "sessions", `${createHash("sha256").update(sessionKey).digest("hex").slice(0, 32)}.jsonl`);
}

/** Creates the journal; directories are made on the first write. */
export function createStatsJournal(options: StatsJournalOptions): StatsJournal {
  const { dir, timeZone, logger } = options;
  const clock = options.clock ?? Date.now;
  const memoryFile = join(dir, "memory-samples.jsonl");
  const usageFile = (date: string) => join(dir, `usage-${date}.jsonl`);
  // One chain of writes for the whole journal: appends land in the order they were made. Lines for a file whose
  // write is already scheduled join it, so a busy server writes each file once per round rather than once per
  // record. Not fsynced: a statistics point needs to survive a crash of the process (the kernel has the write),
  // not a power cut. A file this journal has written before is appended blocking, as the logger writes its lines:
  // a line into the page cache costs the main thread ~5 µs, where node:fs/promises' appendFile (open, write,
  // close, each through the thread pool) costs it ~40 µs and the process ~80 µs a file, twice a turn
  // (docs/decisions/0008-turn-io-measured.md). A new file (a new conversation's) is created through the pool:
  // creating one waits on the file system's journal, which the sessions' fsyncs keep busy.
  let writes: Promise<void> = Promise.resolve();
  const pending = new Map<string, string[]>();
  const madeFolders = new Set<string>();
  const writtenFiles = new Set<string>();
  // Session keys' file names, so a turn hashes nothing (bounded: cleared when full).
  const sessionFiles = new Map<string, string>();
  const fileOf = (sessionKey: string): string => {
    let file = sessionFiles.get(sessionKey);
    if (file === undefined) {
      if (sessionFiles.size >= 10_000) sessionFiles.clear();
      file = sessionFile(dir, sessionKey);
      sessionFiles.set(sessionKey, file);
    }
    return file;
  };

  const append = (file: string, record: object): Promise<void> => {
    const line = `${JSON.stringify(record)}\n`;
    const queued = pending.get(file);
    if (queued !== undefined) {
      queued.push(line);
      return writes;
    }
    pending.set(file, [line]);
    writes = writes.then(async () => {
      const lines = pending.get(file) ?? [];
      pending.delete(file);
      try {
        const folder = dirname(file);
        if (!madeFolders.has(folder)) {
          // Only below the journal's own directory: a vanished data directory loses the point, is not made again.
          await makeDirectoryIn(dir);
          if (folder !== dir) await makeDirectoryIn(folder);
          madeFolders.add(folder);
        }
        const text = lines.join("");
        if (writtenFiles.has(file)) appendFileSync(file, text, { encoding: "utf8", mode: PRIVATE_FILE_MODE });
        else {
          await appendFile(file, text, { encoding: "utf8", mode: PRIVATE_FILE_MODE });
          if (writtenFiles.size >= 10_000) writtenFiles.clear();
          writtenFiles.add(file);
        }
      } catch (error) {
        // A folder removed meanwhile is made again next time, and the file created off the main thread again.
        madeFolders.clear();
        writtenFiles.delete(file);
        logger.warn(
          { error: describeError(error), file },
          "could not record a statistics point; the charts miss it",
        );
      }
    });
    return writes;
  };

  return {
    recordUsage(model, usage) {
      const at = clock();
      void append(usageFile(localDateOf(at, timeZone)), {
        at,
        model,
        promptTokens: usage.promptTokens,
        completionTokens: usage.completionTokens,
      });
    },
    recordTurn(record) {
      void append(fileOf(record.sessionKey), { type: "turn", ...record });
    },
    recordCompaction(record) {
      void append(fileOf(record.sessionKey), { type: "compaction", ...record });
    },
    recordReset(sessionKey) {
      void append(fileOf(sessionKey), { type: "reset", sessionKey, at: clock() });
    },
    async sampleMemory(sample) {
      await writes;
      const at = clock();
      const date = localDateOf(at, timeZone);
      const last = parseLines(await readTextIfExists(memoryFile), memoryLine).at(-1);
      const same =
        last?.date === date &&
        last.files === sample.files &&
        last.chunks === sample.chunks &&
        last.embeddedChunks === sample.embeddedChunks;
      if (same) return;
      await append(memoryFile, {
        date,
        at,
        files: sample.files,
        chunks: sample.chunks,
        ...(sample.embeddedChunks === undefined ? {} : { embeddedChunks: sample.embeddedChunks }),
      });
    },
    async usageByDay(days) {
      await writes;
      const dates = lastLocalDates(days, clock(), timeZone);
      const present = new Set(await readdir(dir).catch(() => [] as string[]));
      return Promise.all(
        dates.map(async (date): Promise<UsageDay> => {
          const name = `usage-${date}.jsonl`;
          const lines = present.has(name)
            ? parseLines(await readTextIfExists(join(dir, name)), usageLine)
            : [];
          const models: Record<string, ModelDayUsage> = {};
          for (const line of lines) {
            const entry = models[line.model] ?? { promptTokens: 0, completionTokens: 0, calls: 0 };
            models[line.model] = {
              promptTokens: entry.promptTokens + line.promptTokens,
              completionTokens: entry.completionTokens + line.completionTokens,
              calls: entry.calls + 1,
            };
          }
          return { date, models };
        }),
      );
    },
    async sessionHistory(sessionKey) {
      await writes;
      const lines = parseLines(await readTextIfExists(sessionFile(dir, sessionKey)), sessionLine).filter(
        (line) => line.sessionKey === sessionKey,
      );
      let turns: TurnRecord[] = [];
      let compactions: CompactionRecord[] = [];
      for (const line of lines) {
        // A reset (or a turn counter that starts over: a `/new` in the chat) begins a new history.
        const restarted = line.type === "turn" && line.turn < (turns.at(-1)?.turn ?? 0);
        if (line.type === "reset" || restarted) {
          turns = [];
          compactions = [];
        }
        if (line.type === "turn") turns.push(recordOf(line));
        else if (line.type === "compaction") compactions.push(recordOf(line));
      }
      return { turns, compactions };
    },
    async memorySamples(days) {
      await writes;
      const dates = new Set(lastLocalDates(days, clock(), timeZone));
      const byDate = new Map<string, MemorySample>();
      for (const sample of parseLines(await readTextIfExists(memoryFile), memoryLine)) {
        if (dates.has(sample.date)) byDate.set(sample.date, sample);
      }
      return [...byDate.values()].sort((a, b) => a.at - b.at);
    },
    flush: () => writes,
  };
}
