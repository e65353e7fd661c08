import { TEST_TOKEN } from "./test-server.js";

/** One server-sent event as a client parses it. */
export interface ReceivedEvent {
  readonly event: string;
  readonly id: number | undefined;
  readonly data: Record<string, unknown>;
}

/** A client of a server-sent-events response: every event received so far, and a way to wait for one. */
export interface EventClient {
  readonly received: readonly ReceivedEvent[];
  /** Resolves with the first event (received or to come) after `from` that matches; rejects after `timeoutMs`. */
  waitFor(
    match: (event: ReceivedEvent) => boolean,
    options?: { from?: number; timeoutMs?: number },
  ): Promise<ReceivedEvent>;
  /** Resolves when the server ended the response. */
  readonly ended: Promise<void>;
  close(): void;
}

/** Parses the frames of an event stream, as a browser's EventSource would (comments skipped). */
export function parseFrames(text: string): { events: ReceivedEvent[]; rest: string } {
  const frames = text.split("\n\n");
  const rest = frames.pop() ?? "";
  const events: ReceivedEvent[] = [];
  for (const frame of frames) {
    let event = "message";
    let id: number | undefined;
    const data: string[] = [];
    for (const line of frame.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("id: ")) id = Number(line.slice(4));
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (data.length > 0)
      events.push({ event, id, data: JSON.parse(data.join("\n")) as Record<string, unknown> });
  }
  return { events, rest };
}

/** Reads an event stream response in the background. */
export function readEvents(response: Response, abort?: AbortController): EventClient {
  const received: ReceivedEvent[] = [];
  const waiters = new Set<() => void>();
  const body = response.body;
  if (!body) throw new Error("no response body");
  let finished = false;
  const ended = (async () => {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parsed = parseFrames(buffer + value);
        buffer = parsed.rest;
        received.push(...parsed.events);
        for (const waiter of waiters) waiter();
      }
    } catch {
      // Aborted by close().
    }
    finished = true;
    for (const waiter of waiters) waiter();
  })();
  return {
    received,
    ended,
    waitFor(match, options = {}) {
      const from = options.from ?? 0;
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = received.slice(from).find(match);
          if (found) {
            cleanup();
            resolve(found);
          } else if (finished) {
            cleanup();
            reject(
              new Error(
                `stream ended without the event; got ${JSON.stringify(received.map((e) => e.event))}`,
              ),
            );
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out; got ${JSON.stringify(received.map((e) => e.event))}`));
        }, options.timeoutMs ?? 5_000);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close() {
      abort?.abort();
    },
  };
}

/** Opens `GET /api/events` of a server with the admin token. */
export async function openLiveEvents(url: string): Promise<EventClient> {
  const abort = new AbortController();
  const response = await fetch(`${url}/api/events`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    signal: abort.signal,
  });
  if (response.status !== 200) throw new Error(`GET /api/events answered ${response.status}`);
  return readEvents(response, abort);
}
