import { MEMORY_FILE } from "@almanac/memory-files";
import { dailyLogDate } from "./hybrid-score.js";
import type { MemorySource } from "./types.js";

/** `memory` for MEMORY.md, `daily` for `memory/YYYY-MM-DD.md` logs, `notes` for the rest. */
export function memorySource(relativePath: string): MemorySource {
  if (relativePath === MEMORY_FILE) return "memory";
  return dailyLogDate(relativePath) === undefined ? "notes" : "daily";
}
