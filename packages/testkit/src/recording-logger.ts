import type { Logger } from "@almanac/core";

/** A log level of core's {@link Logger}. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/** One call to a {@link createRecordingLogger} logger: its level, message and fields (a child's bindings merged in). */
export interface LogEntry {
  readonly level: LogLevel;
  readonly message: string | undefined;
  readonly fields: Record<string, unknown>;
}

/** Options of {@link createRecordingLogger}. */
export interface RecordingLoggerOptions {
  /** The levels to keep (default all; e.g. `["warn", "error"]` beside a chatty SDK). */
  readonly levels?: readonly LogLevel[];
}

/**
 * A logger that pushes every call, its children's included, onto `entries` (a new array by default, also on the
 * logger as `entries`), for tests that check what was logged, or that nothing went wrong quietly.
 */
export function createRecordingLogger(
  entries: LogEntry[] = [],
  options: RecordingLoggerOptions = {},
): Logger & { readonly entries: LogEntry[] } {
  const levels = new Set(options.levels ?? ["debug", "info", "warn", "error"]);
  const make = (bindings: Record<string, unknown>): Logger => {
    const record =
      (level: LogLevel) =>
      (fields: Record<string, unknown>, message?: string): void => {
        if (levels.has(level)) entries.push({ level, message, fields: { ...bindings, ...fields } });
      };
    return {
      debug: record("debug"),
      info: record("info"),
      warn: record("warn"),
      error: record("error"),
      child: (more) => make({ ...bindings, ...more }),
    };
  };
  return Object.assign(make({}), { entries });
}
