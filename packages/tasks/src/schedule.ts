import { Cron } from "croner";
import { z } from "zod";

/**
 * When a task fires: once at an instant, on a cron expression read in a time zone, or every fixed interval from
 * an anchor. Times are milliseconds since the epoch; the local-time arithmetic (and daylight saving) is croner's.
 */
export type Schedule =
  | { readonly kind: "once"; readonly at: number }
  | { readonly kind: "cron"; readonly expression: string; readonly timeZone: string }
  | { readonly kind: "every"; readonly intervalMs: number; readonly anchor: number };

export const scheduleSchema: z.ZodType<Schedule> = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("once"), at: z.number() }),
  z.object({ kind: z.literal("cron"), expression: z.string(), timeZone: z.string() }),
  z.object({ kind: z.literal("every"), intervalMs: z.number().int().positive(), anchor: z.number() }),
]);

/** The shortest interval a recurring task may have (a task is a turn of the model, not a busy loop). */
export const MIN_INTERVAL_MS = 60_000;

/** A schedule the model or a person asked for that cannot be used, with what to send instead. */
export class ScheduleError extends Error {}

/** True for a time zone name the runtime knows (`Europe/Berlin`, `UTC`). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

function cronOf(expression: string, timeZone: string): Cron {
  try {
    return new Cron(expression, { timezone: timeZone, paused: true });
  } catch (error) {
    throw new ScheduleError(
      `"${expression}" is not a cron expression (${(error as Error).message}); use five fields: minute hour day-of-month month day-of-week, e.g. "30 8 * * 1" for Mondays at 08:30.`,
    );
  }
}

/** The first time the schedule fires strictly after `after`, or undefined when it never fires again. */
export function nextFireAfter(schedule: Schedule, after: number): number | undefined {
  switch (schedule.kind) {
    case "once":
      return schedule.at > after ? schedule.at : undefined;
    case "every": {
      if (after < schedule.anchor) return schedule.anchor;
      const periods = Math.floor((after - schedule.anchor) / schedule.intervalMs) + 1;
      return schedule.anchor + periods * schedule.intervalMs;
    }
    case "cron":
      return cronOf(schedule.expression, schedule.timeZone).nextRun(new Date(after))?.getTime();
  }
}

/** The next `count` fire times from `after` (fewer when the schedule ends). */
export function nextFireTimes(schedule: Schedule, after: number, count: number): number[] {
  const times: number[] = [];
  let from = after;
  while (times.length < count) {
    const next = nextFireAfter(schedule, from);
    if (next === undefined) break;
    times.push(next);
    from = next;
  }
  return times;
}

/** A time as a person in `timeZone` reads it: `Mon 7 Dec 2026, 09:00 (Europe/Berlin)` (the same on every ICU). */
export function formatLocal(at: number, timeZone: string): string {
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "short",
    day: "numeric",
    month: "short",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(new Date(at));
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    parts.find((entry) => entry.type === type)?.value ?? "";
  return `${part("weekday")} ${part("day")} ${part("month")} ${part("year")}, ${part("hour")}:${part("minute")} (${timeZone})`;
}

/** The schedule in words. */
export function describeSchedule(schedule: Schedule, timeZone: string): string {
  switch (schedule.kind) {
    case "once":
      return `once, ${formatLocal(schedule.at, timeZone)}`;
    case "every":
      return `every ${describeDuration(schedule.intervalMs)}`;
    case "cron":
      return `cron "${schedule.expression}" (${schedule.timeZone})`;
  }
}

/** `90 minutes`, `2 hours`, `1 day`, `45 seconds`. */
export function describeDuration(ms: number): string {
  const units: Array<[number, string]> = [
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

const DURATION =
  /^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?|d|days?|w|weeks?)\s*$/i;

/** A duration as people and models write it: `90s`, `15 minutes`, `2h`, `1 day`, `PT30M`, or seconds. */
export function parseDuration(text: string | number): number {
  if (typeof text === "number") return Math.round(text * 1000);
  const iso = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$/i.exec(text.trim());
  if (iso !== null && text.trim().length > 1) {
    const [, days = "0", hours = "0", minutes = "0", seconds = "0"] = iso;
    return ((Number(days) * 24 + Number(hours)) * 60 + Number(minutes)) * 60_000 + Number(seconds) * 1000;
  }
  const match = DURATION.exec(text);
  if (match === null)
    throw new ScheduleError(
      `"${text}" is not a duration; write it like "90s", "15 minutes", "2h" or "1 day".`,
    );
  const value = Number(match[1]);
  const unit = (match[2] as string).toLowerCase();
  const size = unit.startsWith("s")
    ? 1_000
    : unit.startsWith("m")
      ? 60_000
      : unit.startsWith("h")
        ? 3_600_000
        : unit.startsWith("d")
          ? 86_400_000
          : 604_800_000;
  return Math.round(value * size);
}

/** What a person or the model asks for; exactly one of the four. */
export interface ScheduleRequest {
  /** A local date and time, `2026-12-07T09:00` (read in `timeZone`), or an instant with an offset. */
  readonly at?: string;
  /** A delay from now: `2h`, `15 minutes`, `90s`. */
  readonly in?: string;
  /** A five-field cron expression read in `timeZone`. */
  readonly cron?: string;
  /** A fixed interval, first firing one interval from now: `1h`, `30 minutes`. */
  readonly every?: string;
  readonly timeZone: string;
}

/**
 * The schedule a request stands for, checked: a time zone the runtime knows, a time in the future, a valid cron
 * expression that fires again, an interval of at least a minute. Throws {@link ScheduleError} saying what to send.
 */
export function scheduleFrom(request: ScheduleRequest, now: number): Schedule {
  const given = (["at", "in", "cron", "every"] as const).filter((key) => request[key] !== undefined);
  if (given.length !== 1)
    throw new ScheduleError(
      `Give exactly one of at (a local time), in (a delay), cron (a cron expression) or every (an interval); got ${given.length === 0 ? "none" : given.join(" and ")}.`,
    );
  if (!isTimeZone(request.timeZone))
    throw new ScheduleError(
      `"${request.timeZone}" is not a time zone; use a name like "Europe/Berlin" or "UTC".`,
    );
  if (request.in !== undefined) {
    const delay = parseDuration(request.in);
    if (delay < 1_000) throw new ScheduleError("The delay must be at least one second.");
    return { kind: "once", at: now + delay };
  }
  if (request.every !== undefined) {
    const intervalMs = parseDuration(request.every);
    if (intervalMs < MIN_INTERVAL_MS)
      throw new ScheduleError(
        "A recurring task can fire at most once a minute; give an interval of 1 minute or more.",
      );
    return { kind: "every", intervalMs, anchor: now + intervalMs };
  }
  if (request.cron !== undefined) {
    const expression = request.cron.trim();
    if (expression.split(/\s+/).length !== 5)
      throw new ScheduleError(
        `"${expression}" has ${expression.split(/\s+/).length} fields; use five: minute hour day-of-month month day-of-week (e.g. "30 8 * * 1").`,
      );
    const schedule: Schedule = { kind: "cron", expression, timeZone: request.timeZone };
    const [first, second] = nextFireTimes(schedule, now, 2);
    if (first === undefined) throw new ScheduleError(`"${expression}" never fires again.`);
    if (second !== undefined && second - first < MIN_INTERVAL_MS)
      throw new ScheduleError("A recurring task can fire at most once a minute.");
    return schedule;
  }
  const text = (request.at as string).trim();
  let at: number;
  if (/(Z|[+-]\d\d:?\d\d)$/i.test(text)) {
    at = Date.parse(text);
  } else {
    // A local time: croner reads an ISO date-time without offset in the task's time zone (daylight saving included).
    try {
      at =
        new Cron(text, { timezone: request.timeZone, paused: true }).nextRun(new Date(0))?.getTime() ??
        Number.NaN;
    } catch {
      at = Number.NaN;
    }
  }
  if (Number.isNaN(at))
    throw new ScheduleError(
      `"${text}" is not a date and time; write it like "2026-12-07T09:00" (local time).`,
    );
  if (at <= now)
    throw new ScheduleError(`${formatLocal(at, request.timeZone)} is in the past; give a time after now.`);
  return { kind: "once", at };
}
