import type { WorkingMemory } from "@almanac/agent";
import { compactionCounters, createContextMeter } from "@almanac/compaction";
import {
  InternalError,
  type Logger,
  linkAbortSignals,
  type Message,
  ProviderError,
  repairToolPairs,
  type TokenCounter,
  type Usage,
} from "@almanac/core";
import type { SessionFigures } from "../events/event-bus.js";
import type { Session } from "../sessions/session.js";
import { type SessionSnapshot, type SessionStats, sessionTitle } from "../sessions/session-snapshot.js";
import { transcriptFacts } from "../sessions/transcript-facts.js";
import type { AgentRuntime, AgentSession } from "./agent-runtime.js";
import { CHECKPOINT_TURNS, type Checkpoint, checkpointOf, onlyAppended } from "./session-checkpoint.js";
import type { SessionReportInput } from "./session-reports.js";
import type { TurnRequest, TurnResult } from "./session-types.js";
import { userMessageOf } from "./turn-input.js";

/** A session's state as it is opened: from its snapshot, rebuilt from its transcript, or new. */
export interface SessionState {
  readonly createdAt: number;
  readonly memory: WorkingMemory;
  readonly stats: SessionStats;
}

/** Options of {@link createSessionRuntime}. */
export interface SessionRuntimeOptions {
  /** Where the session is stored; the runtime is the only writer while it is loaded. */
  readonly session: Session;
  readonly state: SessionState;
  /** True when `state` is what the stored snapshot holds, so a turn that only appends can skip rewriting it. */
  readonly checkpointed: boolean;
  /** Fixed for the session's life in memory, so the prompt prefix stays stable (and cacheable). */
  readonly systemPrompt: string;
  /** Absent when no model is configured (commands still work). */
  readonly runtime: AgentRuntime | undefined;
  /** Used only without a model (no tools then); with one, the agent's compactor measures. */
  readonly tokenCounter: TokenCounter;
  readonly contextWindow: number;
  readonly turnTimeoutMs: number;
  readonly clock: () => number;
  readonly logger: Logger;
}

/** What stops a turn: the lane closing (shutdown), the admin's Stop, the caller going away. */
export interface TurnSignals {
  readonly lane: AbortSignal;
  /** Means "stop this reply": the turn then ends normally with the partial reply kept. */
  readonly stop: AbortSignal;
}

/**
 * One loaded session and everything that belongs to it: its working memory and stats, its stored
 * {@link Session}, the system prompt, the agent side (compactor and meter) and its checkpoint bookkeeping.
 * Created once when the session is loaded, dropped when it is unloaded or reset; the session manager routes
 * to it and runs it in the session's lane (so calls never overlap).
 */
export interface SessionRuntime {
  readonly key: string;
  /** The session as stored: its transcript and snapshot. */
  readonly stored: Session;
  readonly systemPrompt: string;
  /** Absent when no model is configured. */
  readonly agent: AgentSession | undefined;
  readonly createdAt: number;
  readonly memory: WorkingMemory;
  readonly stats: SessionStats;
  /** When the session last ran a turn or command (ms since the epoch). */
  readonly lastUsed: number;
  /** Turns that ended since the snapshot was last written (their messages are in the transcript only). */
  readonly turnsSinceCheckpoint: number;
  /** Records that the session was used now (for unloading idle sessions). */
  touch(): void;
  /**
   * Prompt tokens of the session's next request (system prompt, summary, active messages, tool specs,
   * framing), corrected by the provider ratio: the number compaction triggers on, and the one `/status`,
   * `/compact`, `/history`, the admin API, the live console and the metrics show.
   */
  contextTokens(): number;
  /** The session's numbers for the live console. */
  figures(): SessionFigures;
  /** What `/status` and `/history` are made from. */
  report(): SessionReportInput;
  /** One turn of the agent on the inbound message; what the turn added is kept whatever happens. */
  runTurn(request: TurnRequest, signals: TurnSignals): Promise<TurnResult>;
  /** `/compact [focus]`: compacts now and says what happened; undefined when no model is configured. */
  compact(focus: string | undefined): Promise<string | undefined>;
  /** Writes the snapshot now (with the transcript as it is). */
  save(): Promise<void>;
  /**
   * Makes snapshot and transcript agree again after the previous process stopped: `later` holds transcript
   * messages from after the snapshot (restored unless already in memory); `transcript` is the whole transcript
   * when it may lack messages of the snapshot (appended to it again). Saves the result.
   */
  catchUp(later: readonly Message[], transcript: readonly Message[] | undefined): Promise<void>;
}

/** Creates a session's runtime; see {@link SessionRuntime}. */
export function createSessionRuntime(options: SessionRuntimeOptions): SessionRuntime {
  const { session, systemPrompt, clock, logger } = options;
  const { key } = session;
  const { createdAt, memory } = options.state;
  let stats = options.state.stats;
  let lastUsed = clock();
  /** What the last snapshot holds, to tell whether a turn only appended messages (see {@link CHECKPOINT_TURNS}). */
  let checkpoint: Checkpoint | undefined = options.checkpointed ? checkpointOf(memory) : undefined;
  /**
   * The messages as of the last write: all of them are in the transcript. What a failed write (full disk) kept
   * out stays after it, so the next write appends it first.
   */
  let written: readonly Message[] = memory.messages;

  const agent = options.runtime?.openSession({
    sessionKey: key,
    systemPrompt,
    originals: (ids) => originals(session, ids),
  });
  const meter = agent === undefined ? createContextMeter(options.tokenCounter) : undefined;
  const contextTokens = (): number =>
    agent !== undefined
      ? agent.contextTokens(memory)
      : (meter?.measure(memory, { systemPrompt, tools: [] }).promptTokens ?? 0);
  const compactions = (): number => Math.max(stats.compactions, memory.counter(compactionCounters.count));

  /** The session's stats as of now. */
  function currentStats(): SessionStats {
    return {
      turns: stats.turns,
      compactions: compactions(),
      lastActivity: clock(),
      ...(stats.channel === undefined ? {} : { channel: stats.channel }),
      messageCount: memory.messages.length,
      contextTokens: contextTokens(),
      ...(stats.title === undefined ? {} : { title: stats.title }),
    };
  }

  /** The session's snapshot as of now (updating its stats, and remembering it as the checkpoint). */
  function snapshot(): SessionSnapshot {
    stats = currentStats();
    checkpoint = checkpointOf(memory);
    return { version: 1, key, createdAt, updatedAt: stats.lastActivity, memory: memory.toJSON(), stats };
  }

  /** The messages now, and those of them not in the transcript yet. */
  function unwritten(): { readonly current: readonly Message[]; readonly added: readonly Message[] } {
    const current = memory.messages;
    if (current === written) return { current, added: [] };
    // A turn only appends, or marks messages in place (compaction): what follows the written ones is new.
    if (extendsById(written, current)) return { current, added: current.slice(written.length) };
    const ids = new Set(written.map((message) => message.id));
    return { current, added: current.filter((message) => !ids.has(message.id)) };
  }

  /**
   * Writes the messages not yet in the transcript, without waiting for an fsync (the store does that shortly
   * after, or the turn's synced end does): a crash of the process keeps them, and a model call does not wait.
   */
  async function transcribe(): Promise<void> {
    const { current, added } = unwritten();
    if (added.length > 0) await session.append(added, "written");
    written = current;
  }

  /**
   * Writes what is new to the transcript; with the snapshot too (committed together, one disk wait) when the
   * session changed other than by appending, when {@link CHECKPOINT_TURNS} turns are only in the transcript, or
   * when asked.
   */
  async function persist(force = false): Promise<void> {
    memory.repairToolPairs();
    const { current, added } = unwritten();
    const saved = checkpoint;
    const appendOnly =
      !force && saved !== undefined && saved.turnsSince + 1 < CHECKPOINT_TURNS && onlyAppended(saved, memory);
    // When a write fails neither file changed: `written` stays, so the next turn writes these messages first.
    if (appendOnly) {
      // Synced, with what the turn wrote before (an append of nothing still fsyncs that; with nothing pending it is a lookup).
      await session.append(added);
      stats = currentStats();
      checkpoint = { ...saved, turnsSince: saved.turnsSince + 1 };
    } else {
      await session.checkpoint(snapshot(), added);
    }
    written = current;
  }

  async function runTurn(request: TurnRequest, signals: TurnSignals): Promise<TurnResult> {
    if (agent === undefined)
      throw new InternalError("session.no_model", `Session ${key} cannot run a turn without a model.`);
    const { inbound } = request;
    const input = userMessageOf(inbound);
    memory.append(input);
    // The title is recorded once, from the first user message (this one in a new session; in one stored
    // before titles were, its oldest). The next snapshot keeps it; until then listings take it from the loaded
    // session (or, for a session without a snapshot yet, from its transcript, as every other figure).
    if (stats.title === undefined) {
      const title = sessionTitle(memory.messages);
      if (title !== undefined) stats = { ...stats, title };
    }
    // Open the turn before any model time is spent: the user's words survive a crash of the process from here
    // on, and a power loss once fsynced (shortly after, or with the turn's end; see `AppendDurability`). The
    // transcript past the snapshot's recorded size is the open turn. Messages an earlier full disk kept
    // out of the transcript go first; if this fails too, the input joins them (kept in memory, written by the
    // next turn) and the caller gets the storage error.
    await transcribe();

    let completed = false;
    const turnSignal = linkAbortSignals([signals.lane, signals.stop, request.signal], options.turnTimeoutMs);
    try {
      const result = await agent.runTurn({
        memory,
        // Before every reasoning step (and so before compaction may shorten anything), new messages go to
        // the transcript as they were said.
        transcribe,
        signal: turnSignal.signal,
        stopSignal: signals.stop,
        ...(request.stream ? { stream: true } : {}),
        ...(request.onTextDelta ? { onTextDelta: request.onTextDelta } : {}),
      });
      stats = { ...stats, turns: stats.turns + 1 };
      completed = true;
      const answer = result.reply.content
        .filter((block) => block.type === "text")
        .map((block) => (block.type === "text" ? block.text : ""))
        .join("\n");
      const text = result.notices.length > 0 ? `_${result.notices.join(" ")}_\n\n${answer}` : answer;
      return {
        sessionKey: key,
        kind: "reply",
        text,
        usage: sumUsage(result.usage),
        modelMs: result.modelMs,
        ...(result.stopped === true ? { stopped: true } : {}),
      };
    } catch (error) {
      if (turnSignal.timedOut()) {
        throw new ProviderError(
          "turn.timeout",
          `The turn took longer than ${options.turnTimeoutMs} ms (ALMANAC_TURN_TIMEOUT_MS) and was cancelled.`,
          { isRetryable: true, cause: error },
        );
      }
      throw error;
    } finally {
      turnSignal.dispose();
      // Whatever happened (answer, model error, abort), what the turn added is kept. A turn that failed is
      // checkpointed, so a transcript ending in a user message on load means a crash, not an error.
      await persist(!completed);
    }
  }

  async function catchUp(
    later: readonly Message[],
    transcript: readonly Message[] | undefined,
  ): Promise<void> {
    const inMemory = new Set(memory.messages.map((message) => message.id));
    const restored = later.filter((message) => !inMemory.has(message.id));
    const inTranscript = transcript && new Set(transcript.map((message) => message.id));
    const missingFromTranscript =
      inTranscript === undefined ? [] : memory.messages.filter((message) => !inTranscript.has(message.id));
    if (restored.length > 0) memory.append(...restored);
    const caughtUp = transcriptFacts(restored);
    if (caughtUp !== undefined) stats = { ...stats, turns: stats.turns + caughtUp.turns };
    const repaired = repairToolPairs(memory.messages);
    memory.replaceMessages(repaired);
    const laterIds = new Set(later.map((message) => message.id));
    const repairs = repaired.filter(
      (message) => !inMemory.has(message.id) && !laterIds.has(message.id) && !inTranscript?.has(message.id),
    );
    const toAppend = [...missingFromTranscript, ...repairs];
    // Everything else is in the transcript already; if this append fails, the next write appends these.
    const appending = new Set(toAppend.map((message) => message.id));
    written = memory.messages.filter((message) => !appending.has(message.id));
    if (toAppend.length > 0) await session.append(toAppend);
    written = memory.messages;
    // Turns that ended after the last checkpoint are expected; a tail ending in a user message or a tool
    // call without its result (or repairs) is a turn a crash cut short.
    const last = memory.messages.at(-1);
    const interrupted = toAppend.length > 0 || transcript !== undefined || last?.role !== "assistant";
    const fields = { sessionKey: key, restored: restored.length, appended: toAppend.length };
    if (interrupted) logger.warn(fields, "recovered a turn interrupted by a crash");
    else logger.debug(fields, "caught up with turns in the transcript past the snapshot");
    await session.checkpoint(snapshot());
  }

  return {
    key,
    stored: session,
    systemPrompt,
    agent,
    createdAt,
    memory,
    get stats() {
      return stats;
    },
    get lastUsed() {
      return lastUsed;
    },
    get turnsSinceCheckpoint() {
      return checkpoint?.turnsSince ?? 0;
    },
    touch() {
      lastUsed = clock();
    },
    contextTokens,
    figures: () => ({
      messageCount: memory.messages.length,
      contextTokens: contextTokens(),
      turns: stats.turns,
      compactions: compactions(),
      lastActivity: lastUsed,
    }),
    report: () => ({
      memory,
      systemPrompt,
      stats,
      contextTokens: contextTokens(),
      contextWindow: options.contextWindow,
      tokenCounter: options.tokenCounter,
    }),
    runTurn,
    async compact(focus) {
      if (agent === undefined) return undefined;
      const text = await agent.compact({ memory, ...(focus ? { focus } : {}) });
      await persist();
      return text;
    },
    save: () => session.checkpoint(snapshot()),
    catchUp,
  };
}

/** True when `next` holds the messages of `written` (the same ids in the same places) and maybe more. */
function extendsById(written: readonly Message[], next: readonly Message[]): boolean {
  if (written.length > next.length) return false;
  for (let index = 0; index < written.length; index += 1) {
    const before = written[index] as Message;
    const now = next[index] as Message;
    if (before !== now && before.id !== now.id) return false;
  }
  return true;
}

/** Messages as they were said, from the transcript (written before compaction may shorten anything). */
async function originals(session: Session, ids: readonly string[]): Promise<Map<string, Message>> {
  const wanted = new Set(ids);
  const found = new Map<string, Message>();
  for await (const message of session.history()) {
    if (wanted.has(message.id) && !found.has(message.id)) found.set(message.id, message);
  }
  return found;
}

function sumUsage(usage: readonly Usage[]): TurnResult["usage"] {
  let promptTokens = 0;
  let completionTokens = 0;
  for (const entry of usage) {
    promptTokens += entry.promptTokens;
    completionTokens += entry.completionTokens;
  }
  return { promptTokens, completionTokens };
}
