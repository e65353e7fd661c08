import { type Message, UserError } from "@almanac/core";

/** The server's own IANA time zone (what `Intl` resolves for this process), e.g. `Europe/Berlin`. */
export function defaultTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    try {
      formatter = new Intl.DateTimeFormat("en-US", {
        timeZone,
        year: "numeric",
        month: "2-digit",
        day: "2-digit",
        hour: "2-digit",
        minute: "2-digit",
        hourCycle: "h23",
      });
    } catch (error) {
      throw new UserError(
        "config.invalid",
        `Unknown time zone "${timeZone}"; use an IANA name such as Asia/Shanghai.`,
        {
          cause: error,
        },
      );
    }
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Checks a time zone name, throwing `UserError` `config.invalid` for one `Intl` does not know. */
export function assertTimeZone(timeZone: string): void {
  formatterFor(timeZone);
}

interface LocalParts {
  readonly date: string;
  readonly time: string;
}

/**
 * Since 1980 every zone's offset is a whole number of minutes, so one UTC minute is one local minute: the last
 * minute asked for is kept per zone: `formatToParts` is slow, and the server asks for the date of "now" several
 * times a turn (statistics, daily logs).
 */
const WHOLE_MINUTE_OFFSETS_SINCE = Date.UTC(1980, 0, 1);
const lastMinute = new Map<string, { readonly minute: number; readonly parts: LocalParts }>();

function localParts(timestamp: number, timeZone: string): LocalParts {
  const minute = Math.floor(timestamp / 60_000);
  const cacheable = timestamp >= WHOLE_MINUTE_OFFSETS_SINCE;
  const kept = cacheable ? lastMinute.get(timeZone) : undefined;
  if (kept !== undefined && kept.minute === minute) return kept.parts;
  const parts = formatParts(timestamp, timeZone);
  if (cacheable) lastMinute.set(timeZone, { minute, parts });
  return parts;
}

function formatParts(timestamp: number, timeZone: string): LocalParts {
  const parts = formatterFor(timeZone).formatToParts(new Date(timestamp));
  const part = (type: Intl.DateTimeFormatPartTypes) =>
    parts.find((candidate) => candidate.type === type)?.value ?? "00";
  return {
    date: `${part("year")}-${part("month")}-${part("day")}`,
    time: `${part("hour")}:${part("minute")}`,
  };
}

/** The calendar date (`YYYY-MM-DD`) of an instant in a time zone. */
export function localDateOf(timestamp: number, timeZone: string): string {
  return localParts(timestamp, timeZone).date;
}

/** The wall-clock time (`HH:MM`, 24 h) of an instant in a time zone. */
export function localTimeOf(timestamp: number, timeZone: string): string {
  return localParts(timestamp, timeZone).time;
}

/** The calendar day before `date` (`YYYY-MM-DD`), independent of any time zone. */
export function previousDate(date: string): string {
  const [year = 1970, month = 1, day = 1] = date.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, day - 1)).toISOString().slice(0, 10);
}

/** The messages of one local calendar day. */
export interface DayGroup {
  /** `YYYY-MM-DD` in the configured time zone. */
  readonly date: string;
  /** In their original order. */
  readonly messages: readonly Message[];
}

/**
 * Splits messages by the local date of their timestamps, days in ascending order, each day's
 * messages in their original order. A message with an unusable timestamp goes to `fallbackTimestamp`'s day.
 */
export function groupMessagesByLocalDate(
  messages: readonly Message[],
  timeZone: string,
  fallbackTimestamp: number,
): DayGroup[] {
  const byDate = new Map<string, Message[]>();
  for (const message of messages) {
    const timestamp =
      Number.isFinite(message.timestamp) && message.timestamp > 0 ? message.timestamp : fallbackTimestamp;
    const date = localDateOf(timestamp, timeZone);
    const group = byDate.get(date);
    if (group === undefined) byDate.set(date, [message]);
    else group.push(message);
  }
  return [...byDate.entries()]
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0))
    .map(([date, grouped]) => ({ date, messages: grouped }));
}
