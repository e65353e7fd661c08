import type { DingTalkClock } from "./types.js";

/** The part of the SDK's `ws` socket the watchdog uses. */
export interface WatchedSocket {
  readonly readyState: number;
  ping(): void;
  terminate(): void;
  once(event: "close", listener: () => void): unknown;
}

/** Settings of {@link watchConnection}. */
export interface WatchdogSettings {
  readonly clock: DingTalkClock;
  /** How often to check, and to send a WebSocket ping. */
  readonly intervalMs: number;
  /** Silence (no frame, no pong) after which the connection counts as dead. */
  readonly timeoutMs: number;
  /** When a frame or pong last arrived on this socket. */
  readonly lastHeardAt: () => number;
  /** Ends the watch (the client was stopped). */
  readonly stopSignal: AbortSignal;
  /** Called once before a silent socket is terminated, with how long it had been silent. */
  readonly onSilent: (silentMs: number) => void;
}

const OPEN = 1; // WebSocket.OPEN

/**
 * Keeps one stream socket honest: every `intervalMs` it sends a WebSocket ping, and once nothing (no frame, no
 * pong) has arrived for `timeoutMs` it terminates the socket, so the SDK's close handler reconnects. A half-open
 * TCP connection otherwise looks open for as long as the OS keeps it (hours), while messages silently stop.
 * Resolves when the socket closes, the client stops, or the socket was terminated.
 */
export async function watchConnection(socket: WatchedSocket, settings: WatchdogSettings): Promise<void> {
  const closed = new AbortController();
  socket.once("close", () => closed.abort());
  const signal = AbortSignal.any([closed.signal, settings.stopSignal]);
  for (;;) {
    await settings.clock.sleep(settings.intervalMs, signal);
    if (signal.aborted || socket.readyState !== OPEN) return;
    const silentMs = settings.clock.now() - settings.lastHeardAt();
    if (silentMs >= settings.timeoutMs) {
      settings.onSilent(silentMs);
      socket.terminate();
      return;
    }
    socket.ping();
  }
}
