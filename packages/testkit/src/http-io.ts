import type { IncomingMessage, ServerResponse } from "node:http";

/** Reads a whole request body as UTF-8 text. */
export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString("utf8");
}

/** Parses a body as JSON; text that is not JSON is kept as the raw string (and `ok` is false). */
export function parseJsonBody(text: string): { readonly ok: boolean; readonly value: unknown } {
  if (text === "") return { ok: false, value: "" };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, value: text };
  }
}

/** Sends a JSON response with `content-type: application/json`. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status, { ...headers, "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

/** Resolves after `ms` milliseconds, or as soon as the signal aborts (never rejects). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** An abort signal that fires when the response closes before it finished (client gone or server closing). */
export function responseAbortSignal(response: ServerResponse): AbortController {
  const controller = new AbortController();
  response.on("close", () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller;
}
