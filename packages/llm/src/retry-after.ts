/** The part of a `Headers` object the parser needs (the SDK's errors carry a real `Headers`). */
export interface HeaderSource {
  get(name: string): string | null;
}

/**
 * Reads how long the provider asked us to wait, in milliseconds, or undefined when it did not say.
 * Honours `retry-after-ms` (OpenAI's, milliseconds) first, then `retry-after` as seconds or an HTTP date.
 * A date in the past means "now" (0). Garbage and negative values are ignored.
 */
export function parseRetryAfterMs(
  headers: HeaderSource | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  if (headers === undefined) return undefined;
  const milliseconds = parseNonNegativeNumber(headers.get("retry-after-ms"));
  if (milliseconds !== undefined) return Math.ceil(milliseconds);

  const retryAfter = headers.get("retry-after")?.trim();
  if (!retryAfter) return undefined;
  const seconds = parseNonNegativeNumber(retryAfter);
  if (seconds !== undefined) return Math.ceil(seconds * 1000);
  // Only an HTTP date is allowed besides seconds; Date.parse would also accept "1 2" and friends.
  if (!/[a-z]/i.test(retryAfter)) return undefined;
  const date = Date.parse(retryAfter);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

function parseNonNegativeNumber(text: string | null): number | undefined {
  if (text === null) return undefined;
  const trimmed = text.trim();
  if (!/^\d+(\.\d+)?$/.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : undefined;
}
