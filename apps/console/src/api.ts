import { ERROR_CODE_LIST, type KnownErrorCode } from "../../server/src/errors/error-code-list.js";
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

/**
 * A code the console may meet: one the server declares (its registry, see the server's error-codes.ts), or
 * `http.<status>` for an answer without one (a proxy's error page).
 */
export type ApiErrorCode = KnownErrorCode | ConsoleErrorCode | `http.${number}` | "http.error";

/** The console's own failures, raised before or after a request. */
type ConsoleErrorCode = "console.path_refused" | "console.no_stream" | "console.stream_ended";

/** What an answer's error code is, as far as the console can tell. */
function errorCodeOf(code: string, status: number): ApiErrorCode {
  return (ERROR_CODE_LIST as readonly string[]).includes(code) ? (code as KnownErrorCode) : `http.${status}`;
}

/** An API error with the server's stable code (`memory.conflict`, `auth.unauthorized`, …). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: ApiErrorCode;
  constructor(status: number, code: ApiErrorCode, message: string) {
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
    errorCodeOf(str(error.code), response.status),
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

/** Calls the API with the admin token and returns the body as it came (a download: the token stays in a header). */
export async function apiBlob(path: string): Promise<Blob> {
  return (await request(path)).blob();
}

/** Calls the API with the admin token and returns the parsed JSON body (untrusted: read it with `read.ts`). */
export async function api(path: string, init: { method?: string; body?: unknown } = {}): Promise<unknown> {
  const response = await request(path, {
    method: init.method ?? "GET",
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  return response.json();
}

/** The code of a path the console refuses to put into an API URL (it would leave the route it is meant for). */
export const PATH_REFUSED = "console.path_refused";

/** Path segments that never name a thing: they move up, stay, or double a slash. */
const DOT_OR_EMPTY = new Set(["", ".", ".."]);

/**
 * One path segment of an API URL, percent-encoded. `encodeURIComponent` keeps `.` as it is, and the browser
 * resolves `.` and `..` segments before sending (`/api/memory/files/../../info` is `GET /api/info`), so those,
 * and an empty segment, are refused.
 */
function pathSegment(value: string, what: string): string {
  if (DOT_OR_EMPTY.has(value)) throw new ApiError(0, PATH_REFUSED, `“${value}” is not ${what}.`);
  return encodeURIComponent(value);
}

/** `prefix` + `rest`, checked once more as the browser will resolve it: still under `prefix`. */
function under(prefix: string, rest: string, what: string): string {
  const url = `${prefix}${rest}`;
  if (!new URL(url, location.origin).pathname.startsWith(prefix))
    throw new ApiError(0, PATH_REFUSED, `“${rest}” is not ${what}.`);
  return url;
}

/** `/api/sessions/{key}` with the key encoded as one path segment. */
export function sessionPath(key: string): string {
  return under("/api/sessions/", pathSegment(key, "a session key"), "a session key");
}

/** `/api/summarizer/jobs/{id}/retry`. */
export function jobRetryPath(id: string): string {
  return under("/api/summarizer/jobs/", `${pathSegment(id, "a job id")}/retry`, "a job id");
}

/** `/api/approvals/{id}`. */
export function approvalPath(id: string): string {
  return under("/api/approvals/", pathSegment(id, "an approval id"), "an approval id");
}

/** `/api/tasks/{id}`. */
export function taskPath(id: string): string {
  return under("/api/tasks/", pathSegment(id, "a task id"), "a task id");
}

/** `/api/backups/{name}`. */
export function backupPath(name: string): string {
  return under("/api/backups/", pathSegment(name, "a backup name"), "a backup name");
}

/**
 * `/api/files/content?path=…`: a workspace file's bytes (fetched with {@link apiBlob}, never linked: the token
 * stays in a header). The path is a query value, so it cannot move the request to another route; which files may
 * be read is the server's rule.
 */
export function workspaceFilePath(path: string): string {
  return `/api/files/content?path=${encodeURIComponent(path)}`;
}

/** Answers a waiting tool call; resolves with the settled record (untrusted JSON), rejects with an `ApiError`. */
export function decideApproval(id: string, decision: "approve" | "deny"): Promise<unknown> {
  return api(approvalPath(id), { method: "POST", body: { decision, via: "console" } });
}

/** Separators a memory path must not carry in any spelling: `\` and the percent-encoded `/` and `\`. */
const HIDDEN_SEPARATOR = /\\|%2f|%5c/i;
// Control characters never appear in a memory file's name; a link carrying one is not a memory path.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * `/api/memory/files/{path}`, each `/`-separated part encoded on its own. A path that could reach anything
 * but a memory file (`..` or `.` parts, an absolute path, `\`, encoded separators, control characters) is
 * refused with {@link PATH_REFUSED} before any request: the path may come from a link (`/memory?file=…`).
 * Which files are memory files is the server's rule; this only keeps the URL inside the memory API.
 */
export function memoryFilePath(path: string): string {
  const what = "a memory file path";
  const refused = path.startsWith("/") || HIDDEN_SEPARATOR.test(path) || CONTROL.test(path);
  if (refused || path.split("/").some((part) => DOT_OR_EMPTY.has(part)))
    throw new ApiError(0, PATH_REFUSED, `“${path}” is not ${what}.`);
  return under("/api/memory/files/", path.split("/").map(encodeURIComponent).join("/"), what);
}

/** The end of a streamed console turn. */
export interface ChatDone {
  readonly text: string;
  readonly sessionKey: string;
  /** True when the reply was stopped (`POST /api/sessions/{key}/stop`): `text` is what was written until then. */
  readonly stopped?: boolean;
}

/** A file sent with a console message: its name and its bytes as a base64 `data:` URL. */
export interface ChatAttachment {
  readonly name: string;
  readonly data: string;
}

/**
 * Sends one message of a console conversation (with its files, saved in the conversation's inbox before the
 * turn) and streams the reply: `onDelta` gets each piece as it
 * arrives; resolves with the full text, rejects with an `ApiError` (before or during the stream).
 */
export async function streamChat(
  conversation: string,
  message: string,
  onDelta: (text: string) => void,
  signal?: AbortSignal,
  attachments: readonly ChatAttachment[] = [],
): Promise<ChatDone> {
  const response = await request("/api/console/chat", {
    method: "POST",
    body: JSON.stringify({ conversation, message, ...(attachments.length === 0 ? {} : { attachments }) }),
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
        throw new ApiError(
          200,
          errorCodeOf(str(event.code, "turn.failed"), 200),
          str(event.message, "The turn failed."),
        );
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
