import { type AlmanacError, describeError, isAlmanacError, ProviderError } from "@almanac/core";

function statusOf(error: unknown): number | undefined {
  if (typeof error === "object" && error !== null && "status" in error && typeof error.status === "number") {
    return error.status;
  }
  // The client's QdrantClientUnexpectedResponseError carries the status only in its message.
  const match = error instanceof Error ? /^Unexpected Response: (\d{3})/u.exec(error.message) : null;
  return match === null ? undefined : Number(match[1]);
}

/**
 * Maps whatever the Qdrant client threw to an Almanac error: unreachable, timed out, overloaded or
 * failing server → `index.unavailable` (retryable); any other refusal → `index.request_failed`.
 * Almanac errors pass through unchanged.
 */
export function toQdrantError(error: unknown, url: string, operation: string): AlmanacError {
  if (isAlmanacError(error)) return error;
  const status = statusOf(error);
  const name = error instanceof Error ? error.name : "";
  const unreachable =
    status === undefined &&
    (error instanceof TypeError ||
      name.includes("Timeout") ||
      name === "AbortError" ||
      /fetch failed|ECONNREFUSED|ECONNRESET|ENOTFOUND|socket/iu.test(describeError(error)));
  if (unreachable || status === 429 || (status !== undefined && status >= 500)) {
    return new ProviderError(
      "index.unavailable",
      `Qdrant at ${url} is unavailable (${operation}: ${describeError(error)}). Memory search needs it; check that it is running.`,
      { cause: error, isRetryable: true, ...(status === undefined ? {} : { status }) },
    );
  }
  return new ProviderError("index.request_failed", `Qdrant refused ${operation}: ${describeError(error)}`, {
    cause: error,
    isRetryable: false,
    ...(status === undefined ? {} : { status }),
  });
}
