import type { WorkingMemory } from "@almanac/agent";
import { type Compactor, compactionCounters, createContextMeter } from "@almanac/compaction";
import { type Logger, type Message, repairToolPairs, type TokenCounter, type ToolSpec } from "@almanac/core";
import type { SessionFigures } from "../events/event-bus.js";
import type { Session } from "../sessions/session.js";
import { type SessionSnapshot, type SessionStats, sessionTitle } from "../sessions/session-snapshot.js";
import { transcriptFacts } from "../sessions/transcript-facts.js";
import { CHECKPOINT_TURNS, type Checkpoint, checkpointOf, onlyAppended } from "./session-checkpoint.js";
import type { SessionReportInput } from "./session-reports.js";

/** A session's state as it is opened: from its snapshot, rebuilt from its transcript, or new. */
export interface SessionState {
  readonly createdAt: number;
  readonly memory: WorkingMemory;
  readonly stats: SessionStats;
}

/** What a conversation is made of when its session is loaded. */
export interface ConversationOptions {
  /** Where the session is stored; the conversation is the only writer while it is loaded. */
  readonly session: Session;
  readonly state: SessionState;
  /** True when `state` is what the stored snapshot holds, so a turn that only appends can skip rewriting it. */
  readonly checkpointed: boolean;
  /** Fixed for the conversation's life in memory, so the prompt prefix stays stable (and cacheable). */
  readonly systemPrompt: string;
  /** The conversation's compactor and meter; absent when no model is configured (commands still work). */
  readonly compactor: Compactor | undefined;
  /** The tool specs of the conversation's scope (what every request carries), for measuring between turns. */
  readonly toolSpecs: readonly ToolSpec[];
  readonly tokenCounter: TokenCounter;
  readonly contextWindow: number;
  readonly clock: () => number;
  readonly logger: Logger;
}

/**
 * One loaded conversation and everything that belongs to it: its stored {@link Session} (transcript and
 * snapshot), its working memory and stats, the system prompt and its compactor. Created once when the session
 * is loaded, dropped when it is unloaded or reset: per-conversation state is never rebuilt per turn. The
 * session manager runs everything on it in the session's lane, so no two calls overlap; a turn is run on it by
 * the `TurnRunner`.
 */
export class Conversation {
  readonly key: string;
  readonly stored: Session;
  readonly memory: WorkingMemory;
  readonly systemPrompt: string;
  readonly compactor: Compactor | undefined;
  readonly toolSpecs: readonly ToolSpec[];
  readonly createdAt: number;
  readonly #options: ConversationOptions;
  readonly #meter: ReturnType<typeof createContextMeter>;
  #stats: SessionStats;
  #lastUsed: number;
  /** What the last snapshot holds, to tell whether a turn only appended messages (see {@link CHECKPOINT_TURNS}). */
  #checkpoint: Checkpoint | undefined;
  /**
   * The messages as of the last write: all of them are in the transcript. What a failed write (full disk) kept
   * out stays after it, so the next write appends it first.
   */
  #written: readonly Message[];

  constructor(options: ConversationOptions) {
    this.#options = options;
    this.stored = options.session;
    this.key = options.session.key;
    this.memory = options.state.memory;
    this.systemPrompt = options.systemPrompt;
    this.compactor = options.compactor;
    this.toolSpecs = options.toolSpecs;
    this.createdAt = options.state.createdAt;
    this.#meter = options.compactor?.meter ?? createContextMeter(options.tokenCounter);
    this.#stats = options.state.stats;
    this.#lastUsed = options.clock();
    this.#checkpoint = options.checkpointed ? checkpointOf(this.memory) : undefined;
    this.#written = this.memory.messages;
  }

  get stats(): SessionStats {
    return this.#stats;
  }

  /** When the conversation last ran a turn or command (ms since the epoch). */
  get lastUsed(): number {
    return this.#lastUsed;
  }

  /** Turns that ended since the snapshot was last written (their messages are in the transcript only). */
  get turnsSinceCheckpoint(): number {
    return this.#checkpoint?.turnsSince ?? 0;
  }

  /** Records that the conversation was used now (for unloading idle sessions). */
  touch(): void {
    this.#lastUsed = this.#options.clock();
  }

  /**
   * Prompt tokens of the next request (system prompt, summary, active messages, tool specs, framing), corrected
   * by the provider ratio: the number compaction triggers on, and the one `/status`, `/compact`, `/history`,
   * the admin API, the live console and the metrics show.
   */
  contextTokens(): number {
    return this.#meter.measure(this.memory, { systemPrompt: this.systemPrompt, tools: this.toolSpecs })
      .promptTokens;
  }

  /** The conversation's numbers for the live console. */
  figures(): SessionFigures {
    return {
      messageCount: this.memory.messages.length,
      contextTokens: this.contextTokens(),
      turns: this.#stats.turns,
      compactions: this.#compactions(),
      lastActivity: this.#lastUsed,
    };
  }

  /** What `/status` and `/history` are made from. */
  report(): SessionReportInput {
    return {
      memory: this.memory,
      systemPrompt: this.systemPrompt,
      stats: this.#stats,
      contextTokens: this.contextTokens(),
      contextWindow: this.#options.contextWindow,
      tokenCounter: this.#options.tokenCounter,
    };
  }

  /**
   * Adds the user message a turn starts with, and records the conversation's title from its first user message
   * once (the next snapshot keeps it; until then listings take it from the loaded conversation, or from the
   * transcript for a session without a snapshot yet, as every other figure).
   */
  addUserMessage(input: Message): void {
    this.memory.append(input);
    if (this.#stats.title === undefined) {
      const title = sessionTitle(this.memory.messages);
      if (title !== undefined) this.#stats = { ...this.#stats, title };
    }
  }

  /** Counts a turn that ended with an answer. */
  countTurn(): void {
    this.#stats = { ...this.#stats, turns: this.#stats.turns + 1 };
  }

  /**
   * Writes the messages not yet in the transcript, without waiting for an fsync (the store does that shortly
   * after, or the turn's synced end does): a crash of the process keeps them, and a model call does not wait.
   */
  async transcribe(): Promise<void> {
    const { current, added } = this.#unwritten();
    if (added.length > 0) await this.stored.append(added, "written");
    this.#written = current;
  }

  /**
   * Writes what is new to the transcript; with the snapshot too (committed together, one disk wait) when the
   * conversation changed other than by appending, when {@link CHECKPOINT_TURNS} turns are only in the
   * transcript, or when asked.
   */
  async persist(force = false): Promise<void> {
    this.memory.repairToolPairs();
    const { current, added } = this.#unwritten();
    const saved = this.#checkpoint;
    const appendOnly =
      !force &&
      saved !== undefined &&
      saved.turnsSince + 1 < CHECKPOINT_TURNS &&
      onlyAppended(saved, this.memory);
    // When a write fails neither file changed: `written` stays, so the next turn writes these messages first.
    if (appendOnly) {
      // Synced, with what the turn wrote before (an append of nothing still fsyncs that).
      await this.stored.append(added);
      this.#stats = this.#currentStats();
      this.#checkpoint = { ...saved, turnsSince: saved.turnsSince + 1 };
    } else {
      await this.stored.checkpoint(this.#snapshot(), added);
    }
    this.#written = current;
  }

  /** `/compact [focus]`: compacts now and says what happened in one line; undefined without a model. */
  async compact(focus: string | undefined): Promise<string | undefined> {
    if (this.compactor === undefined) return undefined;
    const result = await this.compactor.compact(this.memory, {
      systemPrompt: this.systemPrompt,
      tools: this.toolSpecs,
      reason: "command",
      ...(focus ? { focus } : {}),
    });
    await this.persist();
    const counts = `${result.tokensBefore.toLocaleString("en-US")} → ${result.tokensAfter.toLocaleString("en-US")} tokens`;
    if (result.outcome === "summarized")
      return `Compacted ${result.compactedMessages} messages into the rolling summary (${counts}, summary by ${result.summarizer}).`;
    if (result.outcome === "compressed") return `Shortened old tool output without summarizing (${counts}).`;
    return `Nothing to compact yet (${counts}).`;
  }

  /** Writes the snapshot now (with the transcript as it is). */
  save(): Promise<void> {
    return this.stored.checkpoint(this.#snapshot());
  }

  /**
   * Makes snapshot and transcript agree again after the previous process stopped: `later` holds transcript
   * messages from after the snapshot (restored unless already in memory); `transcript` is the whole transcript
   * when it may lack messages of the snapshot (appended to it again). Saves the result.
   */
  async catchUp(later: readonly Message[], transcript: readonly Message[] | undefined): Promise<void> {
    const { memory } = this;
    const inMemory = new Set(memory.messages.map((message) => message.id));
    const restored = later.filter((message) => !inMemory.has(message.id));
    const inTranscript = transcript && new Set(transcript.map((message) => message.id));
    const missingFromTranscript =
      inTranscript === undefined ? [] : memory.messages.filter((message) => !inTranscript.has(message.id));
    if (restored.length > 0) memory.append(...restored);
    const caughtUp = transcriptFacts(restored);
    if (caughtUp !== undefined) this.#stats = { ...this.#stats, turns: this.#stats.turns + caughtUp.turns };
    const repaired = repairToolPairs(memory.messages);
    memory.replaceMessages(repaired);
    const laterIds = new Set(later.map((message) => message.id));
    const repairs = repaired.filter(
      (message) => !inMemory.has(message.id) && !laterIds.has(message.id) && !inTranscript?.has(message.id),
    );
    const toAppend = [...missingFromTranscript, ...repairs];
    // Everything else is in the transcript already; if this append fails, the next write appends these.
    const appending = new Set(toAppend.map((message) => message.id));
    this.#written = memory.messages.filter((message) => !appending.has(message.id));
    if (toAppend.length > 0) await this.stored.append(toAppend);
    this.#written = memory.messages;
    // Turns that ended after the last checkpoint are expected; a tail ending in a user message or a tool
    // call without its result (or repairs) is a turn a crash cut short.
    const last = memory.messages.at(-1);
    const interrupted = toAppend.length > 0 || transcript !== undefined || last?.role !== "assistant";
    const fields = { sessionKey: this.key, restored: restored.length, appended: toAppend.length };
    if (interrupted) this.#options.logger.warn(fields, "recovered a turn interrupted by a crash");
    else this.#options.logger.debug(fields, "caught up with turns in the transcript past the snapshot");
    await this.stored.checkpoint(this.#snapshot());
  }

  #compactions(): number {
    return Math.max(this.#stats.compactions, this.memory.counter(compactionCounters.count));
  }

  /** The stats as of now. */
  #currentStats(): SessionStats {
    const stats = this.#stats;
    return {
      turns: stats.turns,
      compactions: this.#compactions(),
      lastActivity: this.#options.clock(),
      ...(stats.channel === undefined ? {} : { channel: stats.channel }),
      messageCount: this.memory.messages.length,
      contextTokens: this.contextTokens(),
      ...(stats.title === undefined ? {} : { title: stats.title }),
    };
  }

  /** The snapshot as of now (updating the stats, and remembering it as the checkpoint). */
  #snapshot(): SessionSnapshot {
    this.#stats = this.#currentStats();
    this.#checkpoint = checkpointOf(this.memory);
    return {
      version: 1,
      key: this.key,
      createdAt: this.createdAt,
      updatedAt: this.#stats.lastActivity,
      memory: this.memory.toJSON(),
      stats: this.#stats,
    };
  }

  /** The messages now, and those of them not in the transcript yet. */
  #unwritten(): { readonly current: readonly Message[]; readonly added: readonly Message[] } {
    const current = this.memory.messages;
    const written = this.#written;
    if (current === written) return { current, added: [] };
    // A turn only appends, or marks messages in place (compaction): what follows the written ones is new.
    if (extendsById(written, current)) return { current, added: current.slice(written.length) };
    const ids = new Set(written.map((message) => message.id));
    return { current, added: current.filter((message) => !ids.has(message.id)) };
  }
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
export async function originalsFromTranscript(
  session: Session,
  ids: readonly string[],
): Promise<Map<string, Message>> {
  const wanted = new Set(ids);
  const found = new Map<string, Message>();
  for await (const message of session.history()) {
    if (wanted.has(message.id) && !found.has(message.id)) found.set(message.id, message);
  }
  return found;
}
