import { silentLogger } from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startIdleCollector } from "./idle-gc.js";

const MB = 2 ** 20;

describe("startIdleCollector", () => {
  let rss: number;
  let cpu: number;
  let collections: number;
  let stop: () => void;

  beforeEach(() => {
    vi.useFakeTimers();
    rss = 100 * MB;
    cpu = 0;
    collections = 0;
    stop = startIdleCollector({
      logger: silentLogger,
      intervalMs: 1000,
      minGrowthBytes: 16 * MB,
      gc: () => {
        collections += 1;
        rss = 100 * MB;
      },
      rss: () => rss,
      cpuMicros: () => cpu,
    });
  });

  afterEach(() => {
    stop();
    vi.useRealTimers();
  });

  it("collects once after a burst of work has grown memory and the process has gone idle", () => {
    rss = 140 * MB;
    cpu += 600_000; // 60 % of the interval: busy
    vi.advanceTimersByTime(1000);
    expect(collections).toBe(0);
    vi.advanceTimersByTime(1000); // idle now
    expect(collections).toBe(1);
    vi.advanceTimersByTime(5000); // still idle, nothing grew
    expect(collections).toBe(1);
  });

  it("never collects while the process works, nor for small growth", () => {
    rss = 110 * MB;
    vi.advanceTimersByTime(3000);
    expect(collections).toBe(0);
    rss = 200 * MB;
    for (let second = 0; second < 5; second += 1) {
      cpu += 100_000; // 10 %: busy
      vi.advanceTimersByTime(1000);
    }
    expect(collections).toBe(0);
  });
});

describe("fullGarbageCollection", () => {
  it("is V8's collection when the process has --expose-gc, and absent otherwise (no flag set behind its back)", async () => {
    const { execFileSync } = await import("node:child_process");
    const probe = `import(${JSON.stringify(new URL("./idle-gc.ts", import.meta.url).href)}).then((m) => console.log(typeof m.fullGarbageCollection()))`;
    const run = (flags: string[]) =>
      execFileSync(process.execPath, [...flags, "--import", "tsx", "--input-type=module", "-e", probe], {
        encoding: "utf8",
      }).trim();
    expect(run(["--expose-gc"])).toBe("function");
    expect(run([])).toBe("undefined");
  });
});
