// Scheduled tasks in words: their schedules, their times in their own time zone, how far ahead a time is.
import type { Schedule } from "./tasks.js";

/** `90 minutes`, `2 hours`, `1 day`, `45 seconds` (mirrors `describeDuration` of `@almanac/tasks`). */
export function describeDuration(ms: number): string {
  const units: ReadonlyArray<readonly [number, string]> = [
    [86_400_000, "day"],
    [3_600_000, "hour"],
    [60_000, "minute"],
    [1_000, "second"],
  ];
  for (const [size, name] of units) {
    if (ms % size === 0 && ms >= size) {
      const count = ms / size;
      return `${count} ${name}${count === 1 ? "" : "s"}`;
    }
  }
  return `${ms} ms`;
}

/**
 * A time as a person in `timeZone` reads it: `Mon 7 Dec 2026, 09:00 (Europe/Berlin)`, as the server writes it
 * (`formatLocal` of `@almanac/tasks`), so the page, the chat and the logs name a time alike. A zone the browser
 * does not know falls back to UTC, named as such.
 */
export function formatInZone(at: number, timeZone: string): string {
  let zone = timeZone;
  let format: Intl.DateTimeFormat;
  const options: Intl.DateTimeFormatOptions = {
    weekday: "short",
    day: "numeric",
    month: "short",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  };
  try {
    format = new Intl.DateTimeFormat("en-GB", { ...options, timeZone });
  } catch {
    zone = "UTC";
    format = new Intl.DateTimeFormat("en-GB", { ...options, timeZone: zone });
  }
  const parts = format.formatToParts(new Date(at));
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    parts.find((entry) => entry.type === type)?.value ?? "";
  return `${part("weekday")} ${part("day")} ${part("month")} ${part("year")}, ${part("hour")}:${part("minute")} (${zone})`;
}

/**
 * The schedule in words: `once, Mon 7 Dec 2026, 09:00 (Europe/Berlin)`, `every 30 minutes`,
 * `cron "30 8 * * 1" (Europe/Berlin)` (mirrors `describeSchedule` of `@almanac/tasks`).
 */
export function describeSchedule(schedule: Schedule, timeZone: string): string {
  switch (schedule.kind) {
    case "once":
      return `once, ${formatInZone(schedule.at, timeZone)}`;
    case "every":
      return `every ${describeDuration(schedule.intervalMs)}`;
    case "cron":
      return `cron "${schedule.expression}" (${schedule.timeZone || timeZone})`;
  }
}

/**
 * How far ahead a time is, coarse enough to read at a glance: `in 45 s`, `in 12 min`, `in 3 h 20 min`,
 * `in 2 d 4 h`, `in 9 d`; `due now` once it has come (the firing is about to be claimed).
 */
export function formatUntil(at: number, now: number): string {
  const seconds = Math.floor((at - now) / 1000);
  if (seconds <= 0) return "due now";
  if (seconds < 60) return `in ${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `in ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 === 0 ? `in ${hours} h` : `in ${hours} h ${minutes % 60} min`;
  const days = Math.floor(hours / 24);
  if (days < 7 && hours % 24 !== 0) return `in ${days} d ${hours % 24} h`;
  return `in ${days} d`;
}
