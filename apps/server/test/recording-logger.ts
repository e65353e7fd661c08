import type { Logger } from "@almanac/core";

/** One call to a {@link createRecordingLogger} logger. */
export interface LogEntry {
  level: string;
  object: Record<string, unknown>;
  message: string | undefined;
}

/** A logger that pushes every call (children included) onto `entries`, for tests that check what was logged. */
export function createRecordingLogger(entries: LogEntry[]): Logger {
  const record =
    (level: string) =>
    (object: Record<string, unknown>, message?: string): void => {
      entries.push({ level, object, message });
    };
  const logger: Logger = {
    debug: record("debug"),
    info: record("info"),
    warn: record("warn"),
    error: record("error"),
    child: () => logger,
  };
  return logger;
}
