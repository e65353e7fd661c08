import { createMessage } from "@almanac/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assertTimeZone,
  groupMessagesByLocalDate,
  localDateOf,
  localTimeOf,
  previousDate,
} from "./local-date.js";

describe("local dates", () => {
  it("puts instants around midnight in Shanghai on the right local day", () => {
    expect(localDateOf(Date.UTC(2024, 2, 9, 15, 59), "Asia/Shanghai")).toBe("2024-03-09");
    expect(localTimeOf(Date.UTC(2024, 2, 9, 15, 59), "Asia/Shanghai")).toBe("23:59");
    expect(localDateOf(Date.UTC(2024, 2, 9, 16, 1), "Asia/Shanghai")).toBe("2024-03-10");
    expect(localTimeOf(Date.UTC(2024, 2, 9, 16, 1), "Asia/Shanghai")).toBe("00:01");
  });

  it("puts instants around midnight in Los Angeles on the right local day, on the day clocks change", () => {
    // 2024-03-10 is the start of daylight saving time in the US (02:00 PST → 03:00 PDT).
    expect(localDateOf(Date.UTC(2024, 2, 10, 7, 59), "America/Los_Angeles")).toBe("2024-03-09");
    expect(localDateOf(Date.UTC(2024, 2, 10, 8, 1), "America/Los_Angeles")).toBe("2024-03-10");
    expect(localTimeOf(Date.UTC(2024, 2, 10, 10, 30), "America/Los_Angeles")).toBe("03:30");
    expect(localDateOf(Date.UTC(2024, 2, 11, 6, 59), "America/Los_Angeles")).toBe("2024-03-10");
    expect(localDateOf(Date.UTC(2024, 2, 11, 7, 1), "America/Los_Angeles")).toBe("2024-03-11");
  });

  it("computes the previous calendar day across months, years and leap days", () => {
    expect(previousDate("2024-03-01")).toBe("2024-02-29");
    expect(previousDate("2023-03-01")).toBe("2023-02-28");
    expect(previousDate("2024-01-01")).toBe("2023-12-31");
    expect(previousDate("2024-05-17")).toBe("2024-05-16");
  });

  it("refuses a time zone Intl does not know, naming it", () => {
    expect(() => assertTimeZone("Mars/Olympus")).toThrow(/Mars\/Olympus/);
    expect(() => assertTimeZone("Asia/Shanghai")).not.toThrow();
  });

  it("groups messages by local day in ascending order, keeping every message in its original order", () => {
    const zones = ["UTC", "Asia/Shanghai", "America/Los_Angeles", "Asia/Kolkata"];
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }), { maxLength: 30 }),
        fc.constantFrom(...zones),
        (timestamps, zone) => {
          const messages = timestamps.map((timestamp, index) =>
            createMessage({ id: `m${index}`, role: "user", content: `message ${index}`, timestamp }),
          );
          const groups = groupMessagesByLocalDate(messages, zone, 0);
          const dates = groups.map((group) => group.date);
          expect([...dates].sort()).toEqual(dates);
          expect(new Set(dates).size).toBe(dates.length);
          for (const group of groups) {
            for (const message of group.messages)
              expect(localDateOf(message.timestamp, zone)).toBe(group.date);
            const indexes = group.messages.map((message) => messages.indexOf(message));
            expect([...indexes].sort((a, b) => a - b)).toEqual(indexes);
          }
          expect(groups.flatMap((group) => group.messages)).toHaveLength(messages.length);
        },
      ),
    );
  });

  it("files a message without a usable timestamp under the fallback instant's day", () => {
    const message = createMessage({ role: "user", content: "no time", timestamp: 0 });
    const groups = groupMessagesByLocalDate([message], "UTC", Date.UTC(2024, 4, 1, 10));
    expect(groups.map((group) => group.date)).toEqual(["2024-05-01"]);
  });
});

describe("local date and time of instants asked for again (kept per zone for the last minute)", () => {
  it("equal Intl's own answer in every zone, from 1980 on and before, across minute edges", () => {
    // An independent reference: Swedish dates read "YYYY-MM-DD HH:MM:SS" in 24-hour time.
    const fresh = (timestamp: number, timeZone: string) =>
      new Date(timestamp).toLocaleString("sv-SE", { timeZone }).slice(0, 16);
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (const timeZone of Intl.supportedValuesOf("timeZone")) {
      for (let index = 0; index < 6; index += 1) {
        // From 1900 (offsets in seconds then) to 2100, then the same minute's edges and a second later.
        const base = Date.UTC(1900, 0, 1) + Math.floor(random() * 200 * 365.25 * 86_400_000);
        const minuteStart = base - (base % 60_000);
        for (const timestamp of [
          base,
          minuteStart,
          minuteStart + 59_999,
          minuteStart + 60_000,
          base + 1000,
        ]) {
          expect(`${localDateOf(timestamp, timeZone)} ${localTimeOf(timestamp, timeZone)}`).toBe(
            fresh(timestamp, timeZone),
          );
        }
      }
    }
  });
});
