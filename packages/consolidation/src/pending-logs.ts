import { hashContent, type MemoryFileStore, mentionsAny } from "@almanac/memory-files";
import { z } from "zod";

/** How much of one daily log a run folded in: its hash and length (UTF-16 units) as read. */
export interface LogMark {
  readonly hash: string;
  readonly chars: number;
}

/**
 * What consolidation has folded in so far. A log whose mark matches is skipped; one that only grew is read from
 * where its mark ends; one edited otherwise is read whole. Logs dated before `floor` are not read again.
 */
export interface Watermark {
  readonly floor: string | null;
  readonly logs: Readonly<Record<string, LogMark>>;
}

export const watermarkSchema: z.ZodType<Watermark> = z.object({
  floor: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}$/)
    .nullable(),
  logs: z.record(z.string(), z.object({ hash: z.string(), chars: z.number().int().min(0) })),
});

/** A watermark that has folded in nothing: the first run reads every daily log. */
export const EMPTY_WATERMARK: Watermark = Object.freeze({ floor: null, logs: Object.freeze({}) });

/** Days a log stays watched after its date: a late edit within them is folded in, older logs are left alone. */
export const WATCH_DAYS = 31;

/** The owner's daily logs: `memory/YYYY-MM-DD.md` (not a topic file, not a shared chat's log). */
const DAILY_LOG = /^memory\/(\d{4}-\d{2}-\d{2})\.md$/;

/** The label of the entry a run writes into the day's log; such entries are never read back as input. */
export const CONSOLIDATION_ENTRY_LABEL = "Consolidated memory";

const OWN_ENTRY = new RegExp(`^- \\d{2}:\\d{2} ${CONSOLIDATION_ENTRY_LABEL}\\b`);
const SUB_BULLET = /^\s+- /;

/** A daily log with something a run has not folded in yet. */
export interface PendingLog {
  readonly path: string;
  readonly date: string;
  /** The new part, cleaned (no own entries, no forgotten lines, no date heading); may be empty. */
  readonly text: string;
  /** True when the log was read whole (new, or edited rather than appended to). */
  readonly whole: boolean;
  /** The log as read; recorded in the watermark when the run commits. */
  readonly mark: LogMark;
}

/** `text` without the consolidation's own entries (and their sub-bullets), forgotten lines and `# date` headings. */
export function cleanLogText(text: string, forgotten: readonly string[]): string {
  const kept: string[] = [];
  let inOwnEntry = false;
  for (const line of text.split("\n")) {
    if (OWN_ENTRY.test(line)) {
      inOwnEntry = true;
      continue;
    }
    if (inOwnEntry && SUB_BULLET.test(line)) continue;
    inOwnEntry = false;
    if (/^# \d{4}-\d{2}-\d{2}\s*$/.test(line)) continue;
    if (mentionsAny(line, forgotten)) continue;
    kept.push(line);
  }
  return kept.join("\n").trim();
}

/** The first day a run on local day `today` reads: the watermark's floor, and never more than the watch. */
function floorOf(watermark: Watermark, today: string): string {
  const cutoff = daysBefore(today, WATCH_DAYS);
  return watermark.floor !== null && watermark.floor > cutoff ? watermark.floor : cutoff;
}

/**
 * The owner's daily logs (oldest first) of the watched days that changed since the watermark, with what is new in
 * each. A first run reads the last {@link WATCH_DAYS} days, not years of logs at once.
 */
export async function findPendingLogs(
  store: MemoryFileStore,
  watermark: Watermark,
  forgotten: readonly string[],
  today: string,
): Promise<PendingLog[]> {
  const floor = floorOf(watermark, today);
  const pending: PendingLog[] = [];
  for (const file of await store.list()) {
    const date = DAILY_LOG.exec(file.path)?.[1];
    if (date === undefined || date < floor) continue;
    const seen = watermark.logs[file.path];
    if (seen?.hash === file.hash) continue;
    const current = await store.tryRead(file.path);
    if (current === undefined) continue;
    const grew =
      seen !== undefined &&
      current.content.length >= seen.chars &&
      hashContent(current.content.slice(0, seen.chars)) === seen.hash;
    const text = grew ? current.content.slice(seen.chars) : current.content;
    pending.push({
      path: file.path,
      date,
      text: cleanLogText(text, forgotten),
      whole: !grew,
      mark: { hash: current.hash, chars: current.content.length },
    });
  }
  return pending.sort((left, right) => (left.date < right.date ? -1 : left.date > right.date ? 1 : 0));
}

/** The calendar day `days` before `date` (`YYYY-MM-DD`). */
function daysBefore(date: string, days: number): string {
  const [year = 1970, month = 1, day = 1] = date.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, day - days)).toISOString().slice(0, 10);
}

/** The watermark after a run folded in `logs` on local day `today`: marks added, logs out of the watch dropped. */
export function advanceWatermark(
  watermark: Watermark,
  logs: readonly PendingLog[],
  today: string,
): Watermark {
  const floor = floorOf(watermark, today);
  const marks: Record<string, LogMark> = {};
  for (const [path, mark] of Object.entries(watermark.logs)) {
    const date = DAILY_LOG.exec(path)?.[1];
    if (date !== undefined && date >= floor) marks[path] = mark;
  }
  for (const log of logs) if (log.date >= floor) marks[log.path] = log.mark;
  return { floor, logs: marks };
}
