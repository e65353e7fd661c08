import { asRecord, str } from "./read.js";

const TOKEN_KEY = "almanac.adminToken";

/** The admin token for this tab (sessionStorage: gone when the tab closes). */
export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Remembers the admin token for this tab. */
export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

/** Forgets the admin token (log out). */
export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** An API error with the server's stable code (`memory.conflict`, `auth.unauthorized`, …). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

let unauthorized: () => void = () => {};

/** What to do when the server answers 401 (the app returns to the login page). */
export function onUnauthorized(handler: () => void): void {
  unauthorized = handler;
}

async function errorFrom(response: Response): Promise<ApiError> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = asRecord(asRecord(body).error);
  return new ApiError(
    response.status,
    str(error.code, `http.${response.status}`),
    str(error.message, text.trim() || `${response.status} ${response.statusText}`),
  );
}

async function request(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${getToken() ?? ""}`);
  if (init.body !== undefined) headers.set("content-type", "application/json");
  const response = await fetch(path, { ...init, headers });
  if (response.status === 401) {
    clearToken();
    unauthorized();
  }
  if (!response.ok) throw await errorFrom(response);
  return response;
}

/** Calls the API with the admin token and returns the parsed JSON body (untrusted: read it with `read.ts`). */
export async function api(path: string, init: { method?: string; body?: unknown } = {}): Promise<unknown> {
  const response = await request(path, {
    method: init.method ?? "GET",
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return response.json();
}

/** `/api/sessions/{key}` with the key encoded as one path segment. */
export function sessionPath(key: string): string {
  return `/api/sessions/${encodeURIComponent(key)}`;
}

/** `/api/memory/files/{path}` keeping the `/` of nested memory paths. */
export function memoryFilePath(path: string): string {
  return `/api/memory/files/${path.split("/").map(encodeURIComponent).join("/")}`;
}

/** The end of a streamed console turn. */
export interface ChatDone {
  readonly text: string;
  readonly sessionKey: string;
  /** True when the reply was stopped (`POST /api/sessions/{key}/stop`): `text` is what was written until then. */
  readonly stopped?: boolean;
}

/**
 * Sends one message of a console conversation and streams the reply: `onDelta` gets each piece as it
 * arrives; resolves with the full text, rejects with an `ApiError` (before or during the stream).
 */
export async function streamChat(
  conversation: string,
  message: string,
  onDelta: (text: string) => void,
  signal?: AbortSignal,
): Promise<ChatDone> {
  const response = await request("/api/console/chat", {
    method: "POST",
    body: JSON.stringify({ conversation, message }),
    ...(signal ? { signal } : {}),
  });
  if (!response.body) throw new ApiError(0, "console.no_stream", "The browser gave no response stream.");
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let boundary = buffer.indexOf("\n\n");
    while (boundary >= 0) {
      const frame = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      boundary = buffer.indexOf("\n\n");
      const data = frame
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      if (data === "") continue;
      const event = asRecord(JSON.parse(data));
      const type = str(event.type);
      if (type === "delta") onDelta(str(event.text));
      else if (type === "done") return { text: str(event.text), sessionKey: str(event.sessionKey) };
      else if (type === "stopped")
        return { text: str(event.text), sessionKey: str(event.sessionKey), stopped: true };
      else if (type === "error")
        throw new ApiError(200, str(event.code, "turn.failed"), str(event.message, "The turn failed."));
    }
  }
  throw new ApiError(0, "console.stream_ended", "The reply stream ended before the answer was complete.");
}

/**
 * Opens `GET /api/events` with the admin token in the header (an `EventSource` cannot send one, and the
 * token never goes into a URL); the caller reads the server-sent events from the body.
 */
export async function openEventStream(signal: AbortSignal): Promise<NonNullable<Response["body"]>> {
  const response = await request("/api/events", { headers: { accept: "text/event-stream" }, signal });
  if (!response.body) throw new ApiError(0, "console.no_stream", "The browser gave no response stream.");
  return response.body;
}

/** Stops the session's running reply; `false` when none was running. */
export async function stopReply(sessionKey: string): Promise<boolean> {
  const body = asRecord(await api(`${sessionPath(sessionKey)}/stop`, { method: "POST" }));
  return body.stopped === true;
}
