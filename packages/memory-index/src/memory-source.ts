import { MEMORY_FILE } from "@almanac/memory-files";
import type { MemorySource } from "./types.js";

const datedLog = /(?:^|\/)(\d{4})-(\d{2})-(\d{2})\.md$/u;

/** The date (UTC ms) of a daily log `memory/YYYY-MM-DD.md`, or undefined for any other file. */
export function dailyLogDate(path: string): number | undefined {
  const match = datedLog.exec(path);
  if (match === null || !path.startsWith("memory/")) return undefined;
  const time = Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  return Number.isNaN(time) ? undefined : time;
}

/** `memory` for MEMORY.md, `daily` for `memory/YYYY-MM-DD.md` logs, `notes` for the rest. */
export function memorySource(relativePath: string): MemorySource {
  if (relativePath === MEMORY_FILE) return "memory";
  return dailyLogDate(relativePath) === undefined ? "notes" : "daily";
}

/**
 * The day a passage speaks for, `YYYY-MM-DD`: a daily log's own date, or else the day (UTC) its file was last
 * modified. Shown with every search hit, so that when two passages disagree the newer one can be told apart.
 */
export function passageDate(path: string, modifiedAt: number): string {
  const time = dailyLogDate(path) ?? modifiedAt;
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? "unknown" : date.toISOString().slice(0, 10);
}
