import type { Logger } from "@almanac/core";
import type { StatsJournal } from "./stats-journal.js";

/** Records the memory index's size for the "memory over time" chart. */
export interface MemorySampler {
  /** Samples the index now (skipped while it syncs or rebuilds: half-done numbers would dip the chart). */
  sampleNow(): Promise<void>;
  /** Stops the timer. */
  stop(): void;
}

/** Options of {@link startMemorySampler}. */
export interface MemorySamplerOptions {
  readonly journal: StatsJournal;
  /** `GET /api/memory/index`'s body: `state`, `files`, `chunks`, `embeddedChunks`. */
  readonly indexStatus: () => Promise<Record<string, unknown>>;
  readonly logger: Logger;
  /** How often to sample (default hourly); the journal keeps one line per change, the chart one point per day. */
  readonly everyMs?: number;
}

const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;

/**
 * Samples the memory index on a timer (unref'd: it never keeps the process alive). Nothing else records how
 * memory grows, so this is the chart's only source: days the server did not run have no point.
 */
export function startMemorySampler(options: MemorySamplerOptions): MemorySampler {
  const sampleNow = async () => {
    try {
      const status = await options.indexStatus();
      const files = count(status.files);
      const chunks = count(status.chunks);
      if (status.state !== "idle" || files === undefined || chunks === undefined) return;
      const embeddedChunks = count(status.embeddedChunks);
      await options.journal.sampleMemory({
        files,
        chunks,
        ...(embeddedChunks === undefined ? {} : { embeddedChunks }),
      });
    } catch (error) {
      options.logger.warn({ err: error }, "could not sample the memory index for the charts");
    }
  };
  const timer = setInterval(() => void sampleNow(), options.everyMs ?? 3_600_000);
  timer.unref();
  return { sampleNow, stop: () => clearInterval(timer) };
}
