import type { ApprovalRecord } from "@almanac/approvals";
import type { ChannelStatus } from "@almanac/core";
import type { FiringRecord, TaskRecord } from "@almanac/tasks";

/** A running turn as the live console shows it. */
export interface RunningTurn {
  readonly sessionKey: string;
  readonly channel: string;
  readonly kind: "reply" | "command";
  readonly startedAt: number;
}

/** The session numbers a list row shows, as of the end of a turn. */
export interface SessionFigures {
  readonly messageCount: number;
  readonly contextTokens: number;
  readonly turns: number;
  readonly compactions: number;
  readonly lastActivity: number;
}

/** Counts of the summarizer queue (absent when no model is configured). */
export interface QueueFigures {
  readonly pending: number;
  readonly running: number;
  readonly parked: number;
  readonly done: number;
}

/** The memory index as the live console shows it. */
export interface IndexFigures {
  /** `idle`, `syncing`, `reindexing` or `rebuilding` (after a damaged index was moved aside). */
  readonly state: string;
  readonly files: number;
  readonly chunks: number;
  readonly rebuilding: boolean;
  readonly lastError?: string;
}

/** A file the assistant sent to a conversation, as the live events tell it. */
export interface SentFile {
  readonly sessionKey: string;
  /** Workspace-relative, `/`-separated. */
  readonly path: string;
  readonly name: string;
  /** The type read from the content. */
  readonly contentType: string;
  readonly size: number;
  readonly caption?: string;
}

/** One change the server pushes to `GET /api/events` (see docs/api.md, "Live events"). */
export type ServerEvent =
  | { readonly type: "session-created"; readonly sessionKey: string }
  | { readonly type: "session-loaded"; readonly sessionKey: string }
  | { readonly type: "session-unloaded"; readonly sessionKey: string }
  | { readonly type: "session-reset"; readonly sessionKey: string }
  | { readonly type: "session-deleted"; readonly sessionKey: string }
  | ({ readonly type: "turn-started" } & RunningTurn)
  | {
      readonly type: "turn-finished";
      readonly sessionKey: string;
      readonly channel: string;
      readonly kind: "reply" | "command";
      readonly outcome: "ok" | "error" | "stopped";
      readonly durationMs: number;
      readonly usage: { readonly promptTokens: number; readonly completionTokens: number };
      /** Absent when the session is gone after the turn (`/new`). */
      readonly session?: SessionFigures;
    }
  | {
      readonly type: "session-compacted";
      readonly sessionKey: string;
      readonly reason: string;
      readonly tokensBefore: number;
      readonly tokensAfter: number;
    }
  | { readonly type: "queue-changed"; readonly queue: QueueFigures }
  | { readonly type: "index-changed"; readonly index: IndexFigures }
  | { readonly type: "channel-changed"; readonly channel: ChannelStatus }
  /** A tool call now waits for the owner, or was answered, expired or closed. */
  | { readonly type: "approval-changed"; readonly approval: ApprovalRecord }
  /** A scheduled task was created or changed (paused, fired, cancelled…), or deleted. */
  | { readonly type: "task-changed"; readonly task: TaskRecord }
  | { readonly type: "task-deleted"; readonly taskId: string }
  /** A firing of a task moved on (claimed, answered, delivered, failed…). */
  | { readonly type: "firing-changed"; readonly firing: FiringRecord; readonly task: TaskRecord | undefined }
  /**
   * The assistant sent a workspace file to a conversation (`send_file`): uploaded to a chat app, or, for the
   * console's and the API's conversations, recorded here (the console shows it in the turn; `path` is what
   * `GET /api/files/content` serves).
   */
  | ({ readonly type: "file-sent" } & SentFile)
  /** A task's reply was delivered to its conversation (the console shows it in a conversation it has open). */
  | {
      readonly type: "task-delivered";
      readonly taskId: string;
      readonly sessionKey: string;
      readonly text: string;
    };

/** An event with the id the bus gave it (increasing over the server's life). */
export interface PublishedEvent {
  readonly id: number;
  readonly event: ServerEvent;
}

/** Listens to every event published after it subscribed. */
export type EventListener = (published: PublishedEvent) => void;

/**
 * The server's in-process event bus: services publish changes, the `/api/events` streams listen. Publishing
 * with nobody listening costs one check (callers test {@link EventBus.active} before building costly payloads),
 * so the turn path pays nothing while no console is open.
 */
export interface EventBus {
  /** True while at least one listener is subscribed. */
  readonly active: boolean;
  publish(event: ServerEvent): void;
  /**
   * Returns the function that unsubscribes. A recorder that keeps history (the charts' journal) passes
   * `watching: false`: it gets every event but is not someone watching, so status sampling stays off.
   */
  subscribe(listener: EventListener, options?: { readonly watching?: boolean }): () => void;
  /** Called with the new count of watching listeners whenever it changes (e.g. to sample status only while watched). */
  onListenerCount(callback: (count: number) => void): () => void;
}

/** Creates an {@link EventBus}. A listener that throws is reported to `onListenerError` and stays subscribed. */
export function createEventBus(options: { onListenerError?: (error: unknown) => void } = {}): EventBus {
  const listeners = new Set<EventListener>();
  const countWatchers = new Set<(count: number) => void>();
  let nextId = 1;
  let watching = 0;
  const countChanged = () => {
    for (const watcher of countWatchers) watcher(watching);
  };
  return {
    get active() {
      return listeners.size > 0;
    },
    publish(event) {
      if (listeners.size === 0) return;
      const published: PublishedEvent = { id: nextId, event };
      nextId += 1;
      for (const listener of [...listeners]) {
        try {
          listener(published);
        } catch (error) {
          options.onListenerError?.(error);
        }
      }
    },
    subscribe(listener, subscribeOptions) {
      // A wrapper per subscription, so the same function subscribed twice is two listeners.
      const entry: EventListener = (published) => listener(published);
      const watches = subscribeOptions?.watching !== false;
      listeners.add(entry);
      if (watches) {
        watching += 1;
        countChanged();
      }
      return () => {
        if (listeners.delete(entry) && watches) {
          watching -= 1;
          countChanged();
        }
      };
    },
    onListenerCount(callback) {
      countWatchers.add(callback);
      return () => {
        countWatchers.delete(callback);
      };
    },
  };
}
