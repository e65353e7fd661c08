import type { Logger } from "@almanac/core";
import type * as lark from "@larksuiteoapi/node-sdk";

/** Which level of our logger each SDK level lands on. */
export type SdkLevelMap = Readonly<
  Record<"error" | "warn" | "info" | "debug" | "trace", keyof Omit<Logger, "child">>
>;

const MAX_LOGGED_CHARACTERS = 500;

/**
 * Adapts the SDK's console-style logger to ours. Every line is flattened to text, cut to 500 characters and
 * scrubbed: the given secrets, bearer tokens and `app_secret` fields become `[redacted]` (the SDK logs whole
 * axios errors, request bodies included).
 */
export function createSdkLogger(
  logger: Logger,
  levels: SdkLevelMap,
  secrets: readonly string[],
): lark.Logger {
  const known = secrets.filter((secret) => secret.length >= 4);
  const write =
    (level: keyof SdkLevelMap) =>
    (...parts: unknown[]): void => {
      let text = parts.flat(2).map(describe).join(" ");
      for (const secret of known) text = text.replaceAll(secret, "[redacted]");
      text = text
        .replace(/(Bearer\s+)[\w.-]+/gi, "$1[redacted]")
        .replace(/("?app_?secret"?\s*[:=]\s*"?)[^",\s}]+/gi, "$1[redacted]");
      if (text.length > MAX_LOGGED_CHARACTERS) text = `${text.slice(0, MAX_LOGGED_CHARACTERS)}…`;
      logger[levels[level]]({ sdk: "lark" }, text);
    };
  return {
    error: write("error"),
    warn: write("warn"),
    info: write("info"),
    debug: write("debug"),
    trace: write("trace"),
  };
}

function describe(part: unknown): string {
  if (typeof part === "string") return part;
  if (part instanceof Error) return `${part.name}: ${part.message}`;
  try {
    return JSON.stringify(part) ?? String(part);
  } catch {
    return String(part);
  }
}
