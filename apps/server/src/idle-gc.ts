import type { Logger } from "@almanac/core";

/**
 * V8's full collection when the process was started with `--expose-gc` (`pnpm start` and the Docker image do;
 * see docs/decisions/0005-idle-collection.md), undefined otherwise: the collector then does nothing.
 */
export function fullGarbageCollection(): (() => void) | undefined {
  const exposed = (globalThis as { gc?: unknown }).gc;
  return typeof exposed === "function" ? (exposed as () => void) : undefined;
}

export interface IdleCollectorOptions {
  readonly logger: Logger;
  /** How often the process is looked at (default 10 s). */
  readonly intervalMs?: number;
  /** Collect only when the resident set grew this much since the last collection (default 16 MiB). */
  readonly minGrowthBytes?: number;
  /** An interval counts as idle when the process used less CPU than this share of it (default 2 %). */
  readonly maxBusyShare?: number;
  /** Injected in tests. */
  readonly gc?: (() => void) | undefined;
  readonly rss?: () => number;
  readonly cpuMicros?: () => number;
}

/**
 * Gives memory back after bursts of work, once the server is idle (docs/decisions/0005-idle-collection.md): V8
 * keeps the heap it grew to, so when a whole interval was idle and the resident set grew by `minGrowthBytes`
 * since the last collection, one full collection runs (tens of milliseconds, only when nothing else is
 * running). No collection happens while the server works, and none again until memory grows again. Returns the
 * stop function.
 */
export function startIdleCollector(options: IdleCollectorOptions): () => void {
  const gc = "gc" in options ? options.gc : fullGarbageCollection();
  const logger = options.logger.child({ component: "idle-gc" });
  if (gc === undefined) {
    logger.debug({}, "full garbage collection unavailable: memory is returned by V8 alone");
    return () => {};
  }
  const intervalMs = options.intervalMs ?? 10_000;
  const minGrowth = options.minGrowthBytes ?? 16 * 1024 * 1024;
  const maxBusyShare = options.maxBusyShare ?? 0.02;
  const rss = options.rss ?? (() => process.memoryUsage.rss());
  const cpuMicros =
    options.cpuMicros ??
    (() => {
      const usage = process.cpuUsage();
      return usage.user + usage.system;
    });
  let baseline = rss();
  let lastCpu = cpuMicros();
  const timer = setInterval(() => {
    const cpu = cpuMicros();
    const busyShare = (cpu - lastCpu) / 1000 / intervalMs;
    lastCpu = cpu;
    const before = rss();
    if (busyShare >= maxBusyShare) return;
    if (before - baseline < minGrowth) {
      // Memory that went down on its own lowers the bar for the next collection.
      baseline = Math.min(baseline, before);
      return;
    }
    const started = performance.now();
    gc();
    baseline = rss();
    // The collection's own CPU does not make the next interval look busy.
    lastCpu = cpuMicros();
    logger.debug(
      {
        rssBeforeMb: Math.round(before / 2 ** 20),
        rssAfterMb: Math.round(baseline / 2 ** 20),
        ms: Math.round(performance.now() - started),
      },
      "idle: full garbage collection",
    );
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
