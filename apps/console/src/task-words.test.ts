import { describe, expect, it } from "vitest";
import * as server from "../../../packages/tasks/src/schedule.js";
import { describeDuration, describeSchedule, formatInZone, formatUntil } from "./task-words.js";
import type { Schedule } from "./tasks.js";

const MONDAY_8_UTC = Date.UTC(2026, 11, 7, 8, 0);

describe("scheduled tasks in words", () => {
  it("names a time in the task's own time zone, as the server writes it", () => {
    expect(formatInZone(MONDAY_8_UTC, "Europe/Berlin")).toBe("Mon 7 Dec 2026, 09:00 (Europe/Berlin)");
    expect(formatInZone(MONDAY_8_UTC, "Asia/Tokyo")).toBe("Mon 7 Dec 2026, 17:00 (Asia/Tokyo)");
    expect(formatInZone(MONDAY_8_UTC, "America/New_York")).toBe("Mon 7 Dec 2026, 03:00 (America/New_York)");
  });

  it("falls back to UTC, and says so, for a time zone the browser does not know", () => {
    expect(formatInZone(MONDAY_8_UTC, "Mars/Olympus")).toBe("Mon 7 Dec 2026, 08:00 (UTC)");
  });

  it("says each kind of schedule in words", () => {
    expect(describeSchedule({ kind: "once", at: MONDAY_8_UTC }, "Europe/Berlin")).toBe(
      "once, Mon 7 Dec 2026, 09:00 (Europe/Berlin)",
    );
    expect(describeSchedule({ kind: "every", intervalMs: 30 * 60_000, anchor: 0 }, "UTC")).toBe(
      "every 30 minutes",
    );
    expect(
      describeSchedule({ kind: "cron", expression: "30 8 * * 1", timeZone: "Europe/Berlin" }, "UTC"),
    ).toBe('cron "30 8 * * 1" (Europe/Berlin)');
  });

  it("names an interval by its largest whole unit", () => {
    expect(describeDuration(60_000)).toBe("1 minute");
    expect(describeDuration(90 * 60_000)).toBe("90 minutes");
    expect(describeDuration(2 * 3_600_000)).toBe("2 hours");
    expect(describeDuration(86_400_000)).toBe("1 day");
    expect(describeDuration(45_000)).toBe("45 seconds");
    expect(describeDuration(1_500)).toBe("1500 ms");
  });

  it("says every schedule and time exactly as the server does (its logs and the chat use the same words)", () => {
    const schedules: Schedule[] = [
      { kind: "once", at: MONDAY_8_UTC },
      { kind: "once", at: Date.UTC(2027, 2, 28, 1, 30) },
      { kind: "every", intervalMs: 60_000, anchor: 0 },
      { kind: "every", intervalMs: 36 * 3_600_000, anchor: 0 },
      { kind: "every", intervalMs: 61_500, anchor: 0 },
      { kind: "cron", expression: "0 9 * * 1-5", timeZone: "America/New_York" },
    ];
    for (const zone of ["Europe/Berlin", "UTC", "Asia/Kolkata", "Pacific/Auckland"])
      for (const schedule of schedules)
        expect(describeSchedule(schedule, zone)).toBe(server.describeSchedule(schedule, zone));
  });

  it("says how far ahead a time is, coarser the further it is", () => {
    const now = MONDAY_8_UTC;
    expect(formatUntil(now + 45_000, now)).toBe("in 45 s");
    expect(formatUntil(now + 59_999, now)).toBe("in 59 s");
    expect(formatUntil(now + 12 * 60_000 + 30_000, now)).toBe("in 12 min");
    expect(formatUntil(now + 3 * 3_600_000, now)).toBe("in 3 h");
    expect(formatUntil(now + 3 * 3_600_000 + 20 * 60_000, now)).toBe("in 3 h 20 min");
    expect(formatUntil(now + 2 * 86_400_000 + 4 * 3_600_000, now)).toBe("in 2 d 4 h");
    expect(formatUntil(now + 2 * 86_400_000, now)).toBe("in 2 d");
    expect(formatUntil(now + 9 * 86_400_000 + 5 * 3_600_000, now)).toBe("in 9 d");
  });

  it("says a time that has come is due now, never a negative delay", () => {
    expect(formatUntil(MONDAY_8_UTC, MONDAY_8_UTC)).toBe("due now");
    expect(formatUntil(MONDAY_8_UTC + 999, MONDAY_8_UTC)).toBe("due now");
    expect(formatUntil(MONDAY_8_UTC - 60_000, MONDAY_8_UTC)).toBe("due now");
  });
});
