import type { WorkingMemory } from "@almanac/agent";
import type { CompactionState } from "@almanac/compaction";
import type { InboundMessage, Logger, Message, MessageButton, TokenCounter } from "@almanac/core";
import type { ReceivedAttachment } from "../attachments/received-attachment.js";
import type { EventBus } from "../events/event-bus.js";
import type { LaneScheduler } from "../sessions/lane-scheduler.js";
import type { SessionStats } from "../sessions/session-snapshot.js";
import type { SessionStore } from "../sessions/session-store.js";
import type { TurnRunner } from "./turn-runner.js";

/** Optional integrations with long-term memory (the summarizer queue, the memory files). */
export interface SessionLifecycle {
  /**
   * The memory section (guide and excerpt) of a session's system prompt, computed when the session is loaded,
   * in at most `roomTokens` when given (what the model's window leaves beside the base prompt and tool specs).
   */
  sessionContext?(sessionKey: string, roomTokens?: number): Promise<string>;
  /** Called with every message of a conversation that `/new` is about to archive (before archiving). */
  sessionEnded?(sessionKey: string, messages: readonly Message[]): Promise<void>;
  /** Extra lines for `/status` (e.g. the summarizer queue). */
  statusLines?(): Promise<string[]>;
}

/** How a turn ended, for metrics: `stopped` is a reply cancelled by `POST /api/sessions/{key}/stop`. */
export type TurnOutcomeLabel = "ok" | "error" | "command" | "stopped";

/** Counts turns for metrics; every callback is optional. */
export interface TurnObserver {
  turnEnded?(channel: string, outcome: TurnOutcomeLabel, seconds: number): void;
}

/** Options of {@link createSessionManager}. */
export interface SessionManagerOptions {
  readonly store: SessionStore;
  readonly scheduler: LaneScheduler;
  /** Runs the turns; absent when no model is configured (commands still work). */
  readonly runner: TurnRunner | undefined;
  /** Env variables to set when no model is configured (for the 503 message). */
  readonly missingModelSettings: readonly string[];
  readonly tokenCounter: TokenCounter;
  readonly limits: {
    readonly maxMessageChars: number;
    readonly idleUnloadMs: number;
    readonly contextWindow: number;
  };
  readonly logger?: Logger;
  readonly clock?: () => number;
  readonly observer?: TurnObserver;
  readonly lifecycle?: SessionLifecycle;
  /**
   * Takes chat messages that answer an approval (`approve K7QD`) before the session's lane: the reply, or
   * undefined for a message that is not an answer.
   */
  readonly approvals?: { answer(inbound: InboundMessage): string | undefined };
  /** Where session and turn changes are published for the live console (nothing is built when none listens). */
  readonly events?: EventBus;
}

/** One turn to run: the inbound message and how the caller wants the answer. */
export interface TurnRequest {
  readonly inbound: InboundMessage;
  /**
   * What became of the message's images and attachments before the turn (saved in the inbox, refused, or not
   * downloadable): the user message is built from these instead of the inbound's own references.
   */
  readonly attachments?: readonly ReceivedAttachment[];
  /**
   * The schedule started this turn (a task or the heartbeat), not a person: its user message carries the
   * `scheduled` mark, so the history, the console and the admin API can tell the two apart.
   */
  readonly scheduled?: boolean;
  readonly stream?: boolean;
  readonly onTextDelta?: (text: string) => void;
  /**
   * Says something to the person in the conversation before the reply (an approval question). A channel sends
   * it as a message of its own; a stream writes it into the reply; absent, the console and the API show it.
   */
  readonly notify?: (text: string, buttons?: readonly MessageButton[]) => Promise<void>;
  /** Aborts the turn (e.g. the HTTP client went away). */
  readonly signal?: AbortSignal;
}

/** What a turn produced. */
export interface TurnResult {
  readonly sessionKey: string;
  readonly kind: "reply" | "command";
  readonly text: string;
  readonly usage: { readonly promptTokens: number; readonly completionTokens: number };
  /**
   * True when the reply was cancelled by a stop request: `text` is then the partial reply with its
   * `[stopped]` mark, as kept in the history. A stopped turn is not an error.
   */
  readonly stopped?: boolean;
  /** Milliseconds the turn waited on the model (see `TurnOutcome.modelMs`); absent for a command. */
  readonly modelMs?: number;
}

/** A session's full state for the admin API. */
export interface SessionDetail {
  readonly key: string;
  readonly loaded: boolean;
  readonly stats: SessionStats;
  readonly summary: WorkingMemory["summary"];
  readonly messages: readonly Message[];
  readonly contextTokens: number;
  readonly contextWindow: number;
  /** Strikes, whether automatic compaction is paused, and the same in words (with how to resume). */
  readonly compaction: CompactionState & { readonly detail: string };
  readonly queued: number;
}
