import { describe, expect, it } from "vitest";
import { parseRetryAfterMs } from "./retry-after.js";

const now = Date.parse("2025-01-01T00:00:00Z");

describe("parseRetryAfterMs", () => {
  it("reads retry-after as whole or fractional seconds", () => {
    expect(parseRetryAfterMs(new Headers({ "retry-after": "1" }), now)).toBe(1000);
    expect(parseRetryAfterMs(new Headers({ "retry-after": "0.25" }), now)).toBe(250);
    expect(parseRetryAfterMs(new Headers({ "retry-after": " 7 " }), now)).toBe(7000);
  });

  it("prefers retry-after-ms over retry-after", () => {
    const headers = new Headers({ "retry-after-ms": "1500", "retry-after": "9" });
    expect(parseRetryAfterMs(headers, now)).toBe(1500);
  });

  it("reads retry-after as an HTTP date relative to now", () => {
    const headers = new Headers({ "retry-after": "Wed, 01 Jan 2025 00:00:30 GMT" });
    expect(parseRetryAfterMs(headers, now)).toBe(30_000);
  });

  it("treats an HTTP date in the past as no wait", () => {
    const headers = new Headers({ "retry-after": "Tue, 31 Dec 2024 23:59:00 GMT" });
    expect(parseRetryAfterMs(headers, now)).toBe(0);
  });

  it("ignores missing, negative and garbage values", () => {
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
    expect(parseRetryAfterMs(new Headers(), now)).toBeUndefined();
    expect(parseRetryAfterMs(new Headers({ "retry-after": "-5" }), now)).toBeUndefined();
    expect(parseRetryAfterMs(new Headers({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(parseRetryAfterMs(new Headers({ "retry-after": "1 2" }), now)).toBeUndefined();
  });

  it("falls back to retry-after when retry-after-ms is garbage", () => {
    const headers = new Headers({ "retry-after-ms": "abc", "retry-after": "2" });
    expect(parseRetryAfterMs(headers, now)).toBe(2000);
  });
});
