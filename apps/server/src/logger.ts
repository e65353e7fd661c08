import pino, { type Logger as PinoLogger } from "pino";

/** Paths pino replaces with "[redacted]": credentials must never reach a log line. */
export const REDACTED_PATHS = [
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  "headers.authorization",
  "*.apiKey",
  "*.adminToken",
  "*.token",
  "*.appSecret",
  "*.clientSecret",
  "*.*.apiKey",
  "*.*.adminToken",
  "config.model.apiKey",
  "config.server.adminToken",
];

/** Creates the server's root logger (JSON lines to stdout, or to the given destination). */
export function createLogger(level: string, destination?: pino.DestinationStream): PinoLogger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      base: { service: "almanac" },
    },
    destination,
  );
}
