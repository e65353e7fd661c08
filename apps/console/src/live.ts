import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, openEventStream } from "./api.js";
import { asRecord, str } from "./read.js";

/** One event of `GET /api/events`: its type (`snapshot`, `turn-started`, …) and its JSON fields. */
export interface LiveEvent {
  readonly type: string;
  readonly data: Record<string, unknown>;
}

/** The connection as the pages show it. */
export type LiveState = "connecting" | "live" | "reconnecting";

type Listener = (event: LiveEvent) => void;

const listeners = new Set<Listener>();
const stateListeners = new Set<(state: LiveState) => void>();
let state: LiveState = "connecting";
let connection: AbortController | undefined;

const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;

function setState(next: LiveState): void {
  state = next;
  for (const listener of stateListeners) listener(next);
}

/** Splits complete frames off `buffer`; returns their events and what is left. */
function takeFrames(buffer: string): { events: LiveEvent[]; rest: string } {
  const frames = buffer.split("\n\n");
  const rest = frames.pop() ?? "";
  const events: LiveEvent[] = [];
  for (const frame of frames) {
    const data = frame
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).trimStart())
      .join("\n");
    if (data === "") continue; // a heartbeat comment
    try {
      const record = asRecord(JSON.parse(data));
      events.push({ type: str(record.type), data: record });
    } catch {
      // A frame that is not JSON carries nothing the pages can use.
    }
  }
  return { events, rest };
}

/** Reads one connection until it ends; true when it delivered a snapshot (so the next retry starts fast). */
async function readOnce(signal: AbortSignal): Promise<boolean> {
  const body = await openEventStream(signal);
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let sawSnapshot = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return sawSnapshot;
    const { events, rest } = takeFrames(buffer + value);
    buffer = rest;
    for (const event of events) {
      if (event.type === "snapshot") {
        sawSnapshot = true;
        setState("live");
      }
      for (const listener of [...listeners]) listener(event);
    }
  }
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Keeps one stream open while any page listens, reconnecting with exponential backoff (1 s up to 30 s). */
async function run(controller: AbortController): Promise<void> {
  let delay = FIRST_RETRY_MS;
  while (!controller.signal.aborted) {
    try {
      if (await readOnce(controller.signal)) delay = FIRST_RETRY_MS;
    } catch (error) {
      // Logged out (401): the app shows the login page; nothing to reconnect to.
      if (error instanceof ApiError && error.status === 401) break;
    }
    if (controller.signal.aborted) break;
    setState("reconnecting");
    await wait(delay, controller.signal);
    delay = Math.min(MAX_RETRY_MS, delay * 2);
  }
}

function subscribe(listener: Listener): () => void {
  listeners.add(listener);
  if (connection === undefined) {
    connection = new AbortController();
    setState("connecting");
    void run(connection);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && connection !== undefined) {
      connection.abort();
      connection = undefined;
    }
  };
}

/**
 * Calls `handler` with every live event while the component is mounted (one shared connection for the
 * whole app), and returns the connection state. A `snapshot` arrives after every (re)connect: pages
 * refresh from it, since changes made while disconnected were not seen.
 */
export function useLiveEvents(handler: Listener): LiveState {
  const latest = useRef(handler);
  latest.current = handler;
  const [current, setCurrent] = useState(state);
  useEffect(() => {
    stateListeners.add(setCurrent);
    const unsubscribe = subscribe((event) => latest.current(event));
    setCurrent(state);
    return () => {
      stateListeners.delete(setCurrent);
      unsubscribe();
    };
  }, []);
  return current;
}

/** A function that runs `action` once, `delayMs` after the last of a burst of calls. */
export function useDebounced(action: () => void, delayMs = 250): () => void {
  const latest = useRef(action);
  latest.current = action;
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return () => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(), delayMs);
  };
}

/** What {@link useLiveData} gives a page: the data once read (with the changes since applied), or the error. */
export interface LiveData<T> {
  readonly data: T | undefined;
  readonly error: unknown;
  readonly live: LiveState;
  /** Reads again (after a change made here while the stream is cut off). */
  reload(): void;
}

/**
 * Data read from the API and kept current by the live events: read when the component mounts (or `key`
 * changes) and again on every (re)connect, since changes made while the stream was cut were not seen; every
 * other event goes through `apply`. Events that arrive while a read is under way are applied over its answer, so
 * nothing seen is lost to an answer that was already on its way.
 */
export function useLiveData<T>(
  load: () => Promise<T>,
  apply: (data: T, event: LiveEvent) => T,
  key: string,
): LiveData<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown }>({
    data: undefined,
    error: undefined,
  });
  // The events seen since the last read began; undefined when no read is under way.
  const sinceRead = useRef<LiveEvent[] | undefined>(undefined);
  const latest = useRef({ load, apply });
  latest.current = { load, apply };
  const read = () => {
    const seen: LiveEvent[] = [];
    sinceRead.current = seen;
    latest.current.load().then(
      (data) => {
        if (sinceRead.current !== seen) return; // a later read answers instead
        sinceRead.current = undefined;
        setState({ data: seen.reduce(latest.current.apply, data), error: undefined });
      },
      (error: unknown) => {
        if (sinceRead.current !== seen) return;
        sinceRead.current = undefined;
        setState((previous) => ({ ...previous, error }));
      },
    );
  };
  useEffect(() => {
    setState({ data: undefined, error: undefined });
    read();
    return () => {
      sinceRead.current = undefined;
    };
  }, [key]);
  const live = useLiveEvents((event) => {
    if (event.type === "snapshot") {
      read();
      return;
    }
    sinceRead.current?.push(event);
    setState((previous) =>
      previous.data === undefined
        ? previous
        : { ...previous, data: latest.current.apply(previous.data, event) },
    );
  });
  return { ...state, live, reload: read };
}
