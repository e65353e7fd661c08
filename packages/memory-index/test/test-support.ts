import type { Logger } from "@almanac/core";
import { z } from "zod";

// Helpers shared by this directory's tests (never imported by production code).

/** One recorded log call. */
export interface LogEntry {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly message: string | undefined;
  readonly fields: Record<string, unknown>;
}

/** A logger that records every call (children included) for assertions. */
export function createRecordingLogger(): Logger & { readonly entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const make = (bindings: Record<string, unknown>): Logger => {
    const record =
      (level: LogEntry["level"]) =>
      (fields: Record<string, unknown>, message?: string): void => {
        entries.push({ level, message, fields: { ...bindings, ...fields } });
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

/** Polls `check` until it returns true, failing after `timeoutMs` (watch tests wait on the index, never sleep blindly). */
export async function waitFor(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const embeddingBody = z.object({ input: z.union([z.string(), z.array(z.string())]) });

/** Texts sent to the scripted embeddings endpoint, across all recorded requests. */
export function embeddedTexts(requests: readonly unknown[]): string[] {
  return requests.flatMap((body) => {
    const parsed = embeddingBody.parse(body);
    return typeof parsed.input === "string" ? [parsed.input] : parsed.input;
  });
}
