import type { WorkingMemory } from "@almanac/agent";
import {
  createMessage,
  type Logger,
  type Message,
  ProviderError,
  parseSessionKey,
  repairToolPairs,
  silentLogger,
  type Usage,
  UserError,
} from "@almanac/core";
import { compactionCounters } from "@almanac/memory";
import type { EventBus, RunningTurn, SessionFigures } from "../events/event-bus.js";
import type { SessionSnapshot, SessionStats } from "../sessions/session-snapshot.js";
import type { SessionSummary } from "../sessions/session-store.js";
import { transcriptFacts } from "../sessions/transcript-facts.js";
import type { AgentSession } from "./agent-runtime.js";
import { type ChatCommand, HELP_TEXT, parseCommand } from "./commands.js";
import {
  hasTranscript,
  readUsableSnapshot,
  recoverFromTranscript,
  type UnusableSnapshot,
} from "./session-recovery.js";
import { historyReport, statusReport } from "./session-reports.js";
import { createSessionRuntime, type SessionRuntime } from "./session-runtime.js";
import type {
  SessionDetail,
  SessionManagerOptions,
  TurnOutcomeLabel,
  TurnRequest,
  TurnResult,
} from "./session-types.js";

export type {
  SessionDetail,
  SessionManagerOptions,
  TurnRequest,
  TurnResult,
} from "./session-types.js";

interface LoadedSession {
  readonly key: string;
  readonly createdAt: number;
  /** System prompt, compactor and meter: made once when the session is loaded, dropped with it. */
  readonly runtime: SessionRuntime;
  memory: WorkingMemory;
  stats: SessionStats;
  lastUsed: number;
  /** Ids of messages a failed write (full disk) kept out of the transcript; the next turn appends them first. */
  untranscribed?: ReadonlySet<string>;
  /** What the last snapshot holds, to tell whether a turn only appended messages (see {@link CHECKPOINT_TURNS}). */
  checkpoint?: Checkpoint;
}

/** A turn running in its lane: what the live console shows, and how a stop request reaches it. */
interface ActiveTurn {
  readonly turn: RunningTurn;
  /** Aborted by {@link SessionManager.stop}; only replies listen to it. */
  readonly stop: AbortController;
}

/** The state a snapshot was written from. */
interface Checkpoint {
  readonly messages: readonly Message[];
  readonly summary: unknown;
  readonly counters: Readonly<Record<string, number>>;
  /** Turns that ended since, with their messages in the transcript only. */
  readonly turnsSince: number;
}

/**
 * Turns whose messages may sit in the transcript only (past the snapshot's recorded size) before the snapshot
 * is written again. A turn that only appended messages costs one transcript append then, not a rewrite of the
 * whole snapshot; loading replays at most this many turns from the transcript. Anything else a turn changed
 * (compaction, the summary, marks, repairs, counters) is written with the turn.
 */
const CHECKPOINT_TURNS = 16;

function sumUsage(usage: readonly Usage[]): TurnResult["usage"] {
  let promptTokens = 0;
  let completionTokens = 0;
  for (const entry of usage) {
    promptTokens += entry.promptTokens;
    completionTokens += entry.completionTokens;
  }
  return { promptTokens, completionTokens };
}

/**
 * Owns every conversation: loads sessions on demand, runs one turn at a time per session through the lane
 * scheduler, persists after every turn (the turn's messages and the snapshot committed together), and unloads
 * idle sessions.
 *
 * Crash safety: before the model is called the user's message is in the transcript (fsynced). The snapshot is a
 * checkpoint that records the transcript's size when it was written; transcript lines past it on load are turns
 * that ended after it (up to {@link CHECKPOINT_TURNS}) or the turn the process died in. They are restored into the
 * session, and tool calls left without results get explicit error results. (Snapshots of earlier versions marked
 * an interrupted turn with `openTurn`; those are still reconciled.)
 */
export class SessionManager {
  readonly #options: SessionManagerOptions;
  readonly #logger: Logger;
  readonly #clock: () => number;
  readonly #sessions = new Map<string, LoadedSession>();
  readonly #loading = new Map<string, Promise<LoadedSession>>();
  /** The turn running in each session's lane (one at most per session). */
  readonly #running = new Map<string, ActiveTurn>();
  readonly #events: EventBus | undefined;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(options: SessionManagerOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? Date.now;
    this.#events = options.events;
    const every = Math.max(1_000, Math.min(60_000, Math.floor(options.limits.idleUnloadMs / 2)));
    this.#sweeper = setInterval(() => this.unloadIdle(), every);
    this.#sweeper.unref();
  }

  /** Sessions held in memory right now. */
  loadedCount(): number {
    return this.#sessions.size;
  }

  /** Prompt tokens of every loaded session's next request (the meter `/status` shows), for the metrics. */
  loadedContextTokens(): number[] {
    return [...this.#sessions.values()].map((session) => this.#contextTokens(session));
  }

  /** Keys of the sessions held in memory right now. */
  loadedKeys(): string[] {
    return [...this.#sessions.keys()];
  }

  /** The turns running right now (one per session at most), oldest first. */
  runningTurns(): RunningTurn[] {
    return [...this.#running.values()].map((active) => active.turn);
  }

  /**
   * Cancels the reply the session is generating (the model request included, through the turn's signal). The
   * turn then ends normally with the partial reply kept and marked (see `stoppedReply`). Messages queued
   * behind it still run. Returns false when no reply was running (a running command is not stopped).
   */
  stop(key: string): boolean {
    parseSessionKey(key);
    const active = this.#running.get(key);
    if (active === undefined || active.turn.kind !== "reply" || active.stop.signal.aborted) return false;
    active.stop.abort(new UserError("turn.stopped", "The reply was stopped on request."));
    this.#logger.info({ sessionKey: key }, "stop requested for the running reply");
    return true;
  }

  /** Handles one inbound message: a command, or a turn of the agent. */
  async handle(request: TurnRequest): Promise<TurnResult> {
    const { inbound } = request;
    parseSessionKey(inbound.sessionKey);
    if (inbound.text.length > this.#options.limits.maxMessageChars) {
      throw new UserError(
        "message.too_long",
        `The message has ${inbound.text.length} characters; the limit is ${this.#options.limits.maxMessageChars} (ALMANAC_MAX_MESSAGE_CHARS).`,
      );
    }
    const command = parseCommand(inbound.text);
    if (command === undefined && this.#options.runtime === undefined) {
      throw new UserError(
        "model.not_configured",
        `No model is configured yet. Set ${this.#options.missingModelSettings.join(" and ")} (see README, "Pointing Almanac at a model") and restart.`,
      );
    }
    const started = this.#clock();
    let outcome: TurnOutcomeLabel = command ? "command" : "ok";
    try {
      const result = await this.#options.scheduler.run(inbound.sessionKey, async (laneSignal) => {
        const session = await this.#acquire(inbound.sessionKey, inbound.channel);
        const active = this.#begin(session.key, inbound.channel, command ? "command" : "reply");
        let turnResult: TurnResult | undefined;
        try {
          turnResult =
            command !== undefined
              ? await this.#runCommand(session, command)
              : await this.#runTurn(session, request, laneSignal, active.stop.signal);
          return turnResult;
        } finally {
          session.lastUsed = this.#clock();
          this.#end(session, active, turnResult);
        }
      });
      if (result.stopped === true) outcome = "stopped";
      return result;
    } catch (error) {
      outcome = "error";
      throw error;
    } finally {
      this.#options.observer?.turnEnded?.(inbound.channel, outcome, (this.#clock() - started) / 1000);
    }
  }

  /** Records the turn as running (for the live console and {@link stop}) and says so. */
  #begin(sessionKey: string, channel: string, kind: RunningTurn["kind"]): ActiveTurn {
    const active: ActiveTurn = {
      turn: { sessionKey, channel, kind, startedAt: this.#clock() },
      stop: new AbortController(),
    };
    this.#running.set(sessionKey, active);
    this.#events?.publish({ type: "turn-started", ...active.turn });
    return active;
  }

  /** Forgets the running turn and publishes how it ended (with the session's numbers, while someone listens). */
  #end(session: LoadedSession, active: ActiveTurn, result: TurnResult | undefined): void {
    if (this.#running.get(session.key) === active) this.#running.delete(session.key);
    const events = this.#events;
    if (!events?.active) return;
    const { turn } = active;
    // `/new` and resets drop the session from memory: its numbers are gone with it.
    const figures: SessionFigures | undefined =
      this.#sessions.get(session.key) === session
        ? {
            messageCount: session.memory.messages.length,
            contextTokens: this.#contextTokens(session),
            turns: session.stats.turns,
            compactions: Math.max(
              session.stats.compactions,
              session.memory.counter(compactionCounters.count),
            ),
            lastActivity: session.lastUsed,
          }
        : undefined;
    events.publish({
      type: "turn-finished",
      sessionKey: turn.sessionKey,
      channel: turn.channel,
      kind: turn.kind,
      outcome: result === undefined ? "error" : result.stopped === true ? "stopped" : "ok",
      durationMs: this.#clock() - turn.startedAt,
      usage: result?.usage ?? { promptTokens: 0, completionTokens: 0 },
      ...(figures === undefined ? {} : { session: figures }),
    });
  }

  async #runTurn(
    session: LoadedSession,
    request: TurnRequest,
    laneSignal: AbortSignal,
    stopSignal: AbortSignal,
  ): Promise<TurnResult> {
    const agent = session.runtime.agent as AgentSession;
    const { inbound } = request;
    const input = createMessage({
      role: "user",
      timestamp: inbound.receivedAt,
      content: [
        ...(inbound.text === "" ? [] : [{ type: "text" as const, text: inbound.text }]),
        ...(inbound.images ?? []),
      ],
    });
    const before = new Set(
      session.memory.messages.map((message) => message.id).filter((id) => !session.untranscribed?.has(id)),
    );
    session.memory.append(input);
    // Open the turn durably before any model time is spent: the user's words survive a crash from here on
    // (the transcript past the snapshot's recorded size is the open turn). Messages an earlier full disk kept
    // out of the transcript go first; if this fails too, the input joins them (kept in memory, written by the
    // next turn) and the caller gets the storage error.
    await this.#transcribe(session, before);

    let completed = false;
    const timeout = AbortSignal.timeout(this.#options.limits.turnTimeoutMs);
    const signals = [laneSignal, timeout, stopSignal];
    if (request.signal) signals.push(request.signal);
    try {
      const result = await agent.runTurn({
        memory: session.memory,
        // Before every reasoning step (and so before compaction may shorten anything), new messages go to
        // the transcript as they were said.
        transcribe: () => this.#transcribe(session, before),
        signal: AbortSignal.any(signals),
        stopSignal,
        ...(request.stream ? { stream: true } : {}),
        ...(request.onTextDelta ? { onTextDelta: request.onTextDelta } : {}),
      });
      session.stats = { ...session.stats, turns: session.stats.turns + 1 };
      completed = true;
      const answer = result.reply.content
        .filter((block) => block.type === "text")
        .map((block) => (block.type === "text" ? block.text : ""))
        .join("\n");
      const text = result.notices.length > 0 ? `_${result.notices.join(" ")}_\n\n${answer}` : answer;
      return {
        sessionKey: session.key,
        kind: "reply",
        text,
        usage: sumUsage(result.usage),
        ...(result.stopped === true ? { stopped: true } : {}),
      };
    } catch (error) {
      if (timeout.aborted) {
        throw new ProviderError(
          "turn.timeout",
          `The turn took longer than ${this.#options.limits.turnTimeoutMs} ms (ALMANAC_TURN_TIMEOUT_MS) and was cancelled.`,
          { isRetryable: true, cause: error },
        );
      }
      throw error;
    } finally {
      // Whatever happened (answer, model error, abort), what the turn added is kept. A turn that failed is
      // checkpointed, so a transcript ending in a user message on load means a crash, not an error.
      await this.#persist(session, before, { checkpoint: !completed });
    }
  }

  async #runCommand(session: LoadedSession, command: ChatCommand): Promise<TurnResult> {
    const reply = (text: string): TurnResult => ({
      sessionKey: session.key,
      kind: "command",
      text,
      usage: { promptTokens: 0, completionTokens: 0 },
    });
    switch (command.name) {
      case "help":
        return reply(HELP_TEXT);
      case "new": {
        await this.#options.lifecycle?.sessionEnded?.(session.key, await this.#transcript(session.key));
        const archived = await this.#options.store.archive(session.key);
        this.#sessions.delete(session.key);
        this.#logger.info({ sessionKey: session.key, archived }, "session reset by /new");
        this.#events?.publish({ type: "session-reset", sessionKey: session.key });
        return reply("Started a new conversation. The previous one is archived with its full transcript.");
      }
      case "status":
        return reply(
          [
            statusReport({
              ...this.#report(session),
              model:
                this.#options.runtime?.modelName ??
                `not configured (set ${this.#options.missingModelSettings.join(", ")})`,
              queued: this.#options.scheduler.stats().byKey(session.key).queued,
            }),
            ...((await this.#options.lifecycle?.statusLines?.()) ?? []),
          ].join("\n"),
        );
      case "history":
        return reply(historyReport(this.#report(session)));
      case "compact": {
        const agent = session.runtime.agent;
        if (!agent) return reply("Compaction needs a model; none is configured yet.");
        const before = new Set(session.memory.messages.map((message) => message.id));
        const text = await agent.compact({
          memory: session.memory,
          ...(command.focus ? { focus: command.focus } : {}),
        });
        await this.#persist(session, before);
        return reply(text);
      }
    }
  }

  /** The session's runtime: its system prompt (with the memory excerpt of this moment), compactor and meter. */
  async #openRuntime(key: string): Promise<SessionRuntime> {
    return createSessionRuntime({
      sessionKey: key,
      systemPrompt: await this.#systemPromptFor(key),
      runtime: this.#options.runtime,
      tokenCounter: this.#options.tokenCounter,
      originals: (ids) => this.#originals(key, ids),
    });
  }

  /** Messages as they were said, from the transcript (written before compaction may shorten anything). */
  async #originals(key: string, ids: readonly string[]): Promise<Map<string, Message>> {
    const wanted = new Set(ids);
    const found = new Map<string, Message>();
    for await (const message of this.#options.store.readTranscript(key)) {
      if (wanted.has(message.id) && !found.has(message.id)) found.set(message.id, message);
    }
    return found;
  }

  async #systemPromptFor(key: string): Promise<string> {
    const runtime = this.#options.runtime;
    if (!runtime) return "";
    let context = "";
    try {
      context = (await this.#options.lifecycle?.sessionContext?.(key)) ?? "";
    } catch (error) {
      this.#logger.warn(
        { err: error, sessionKey: key },
        "could not load the memory excerpt; the session starts without it",
      );
    }
    return runtime.systemPrompt(context);
  }

  /** The one meter (see `SessionRuntime.contextTokens`). */
  #contextTokens(session: LoadedSession): number {
    return session.runtime.contextTokens(session.memory);
  }

  #report(session: LoadedSession) {
    return {
      memory: session.memory,
      systemPrompt: session.runtime.systemPrompt,
      stats: session.stats,
      contextTokens: this.#contextTokens(session),
      contextWindow: this.#options.limits.contextWindow,
      tokenCounter: this.#options.tokenCounter,
    };
  }

  /** Appends the messages not yet in the transcript (ids not in `transcribed`), and remembers them. */
  async #transcribe(session: LoadedSession, transcribed: Set<string>): Promise<void> {
    const added = session.memory.messages.filter((message) => !transcribed.has(message.id));
    if (added.length === 0) return;
    try {
      await this.#options.store.appendTranscript(session.key, added);
    } catch (error) {
      session.untranscribed = new Set(added.map((message) => message.id));
      throw error;
    }
    for (const message of added) transcribed.add(message.id);
    session.untranscribed = undefined;
  }

  /**
   * Writes what is new to the transcript; with the snapshot too (committed together, one disk wait) when the
   * session changed other than by appending, when {@link CHECKPOINT_TURNS} turns are only in the transcript, or
   * when asked.
   */
  async #persist(
    session: LoadedSession,
    transcribed: Set<string>,
    options: { readonly checkpoint?: boolean } = {},
  ): Promise<void> {
    session.memory.replaceMessages(repairToolPairs(session.memory.messages));
    const added = session.memory.messages.filter((message) => !transcribed.has(message.id));
    const saved = session.checkpoint;
    const appendOnly =
      options.checkpoint !== true &&
      saved !== undefined &&
      saved.turnsSince + 1 < CHECKPOINT_TURNS &&
      onlyAppended(saved, session.memory);
    try {
      if (appendOnly) {
        if (added.length > 0) await this.#options.store.appendTranscript(session.key, added);
        session.stats = this.#stats(session);
        session.checkpoint = { ...saved, turnsSince: saved.turnsSince + 1 };
      } else {
        await this.#options.store.commit(this.#snapshot(session), added);
      }
    } catch (error) {
      // Neither file changed: the messages stay in memory and the next turn writes them first.
      if (added.length > 0) session.untranscribed = new Set(added.map((message) => message.id));
      throw error;
    }
    for (const message of added) transcribed.add(message.id);
    session.untranscribed = undefined;
  }

  async #save(session: LoadedSession): Promise<void> {
    await this.#options.store.save(this.#snapshot(session));
  }

  /** The session's stats as of now. */
  #stats(session: LoadedSession): SessionStats {
    return {
      turns: session.stats.turns,
      compactions: Math.max(session.stats.compactions, session.memory.counter(compactionCounters.count)),
      lastActivity: this.#clock(),
      ...(session.stats.channel === undefined ? {} : { channel: session.stats.channel }),
      messageCount: session.memory.messages.length,
      contextTokens: this.#contextTokens(session),
    };
  }

  /** The session's snapshot as of now (updating its stats, and remembering it as the checkpoint). */
  #snapshot(session: LoadedSession): SessionSnapshot {
    session.stats = this.#stats(session);
    const now = session.stats.lastActivity;
    session.checkpoint = checkpointOf(session.memory);
    return {
      version: 1,
      key: session.key,
      createdAt: session.createdAt,
      updatedAt: now,
      memory: session.memory.toJSON(),
      stats: session.stats,
    };
  }

  async #acquire(key: string, channel: string | undefined): Promise<LoadedSession> {
    const loaded = this.#sessions.get(key);
    if (loaded) return loaded;
    let pending = this.#loading.get(key);
    if (!pending) {
      pending = this.#load(key, channel).finally(() => this.#loading.delete(key));
      this.#loading.set(key, pending);
    }
    const session = await pending;
    if (!this.#sessions.has(key)) this.#events?.publish({ type: "session-loaded", sessionKey: key });
    this.#sessions.set(key, session);
    return session;
  }

  async #transcript(key: string): Promise<Message[]> {
    const messages: Message[] = [];
    for await (const message of this.#options.store.readTranscript(key)) messages.push(message);
    return messages;
  }

  async #load(key: string, channel: string | undefined): Promise<LoadedSession> {
    const now = this.#clock();
    const runtime = await this.#openRuntime(key);
    const result = await readUsableSnapshot(this.#options.store, key);
    if (result.status !== "ok") return this.#rebuild(key, channel, runtime, result);
    const { snapshot, memory } = result;
    const { openTurn, ...stats } = snapshot.stats;
    const session: LoadedSession = {
      key,
      createdAt: snapshot.createdAt,
      runtime,
      memory,
      stats,
      lastUsed: now,
      checkpoint: checkpointOf(memory),
    };
    if (openTurn !== undefined) {
      // Written by an earlier version: the turn opened with `inputId` was cut short.
      const transcript = await this.#transcript(key);
      const start = transcript.findIndex((message) => message.id === openTurn.inputId);
      await this.#reconcile(session, start === -1 ? [] : transcript.slice(start + 1), transcript);
    } else if (result.transcriptBehind) {
      await this.#reconcile(session, [], await this.#transcript(key));
    } else if (result.unseen.length > 0) {
      await this.#reconcile(session, result.unseen, undefined);
    }
    return session;
  }

  /** A session without a usable snapshot: rebuilt from its transcript and saved (or new, when there is none). */
  async #rebuild(
    key: string,
    channel: string | undefined,
    runtime: SessionRuntime,
    snapshot: UnusableSnapshot,
  ): Promise<LoadedSession> {
    const now = this.#clock();
    const { fromTranscript, ...state } = recoverFromTranscript({
      key,
      channel,
      snapshot,
      transcript: await this.#transcript(key),
      now,
      logger: this.#logger,
    });
    const session: LoadedSession = { key, runtime, lastUsed: now, ...state };
    if (fromTranscript) await this.#save(session);
    else if (snapshot.status === "missing")
      this.#events?.publish({ type: "session-created", sessionKey: key });
    return session;
  }

  /**
   * The previous process died during a turn (or the transcript lost lines): make snapshot and transcript agree
   * again. `later` holds transcript messages from after the snapshot (restored unless already in memory);
   * `transcript` is the whole transcript when it may lack messages of the snapshot (appended to it again).
   */
  async #reconcile(
    session: LoadedSession,
    later: readonly Message[],
    transcript: readonly Message[] | undefined,
  ): Promise<void> {
    const inMemory = new Set(session.memory.messages.map((message) => message.id));
    const restored = later.filter((message) => !inMemory.has(message.id));
    const inTranscript = transcript && new Set(transcript.map((message) => message.id));
    const missingFromTranscript =
      inTranscript === undefined
        ? []
        : session.memory.messages.filter((message) => !inTranscript.has(message.id));
    if (restored.length > 0) session.memory.append(...restored);
    const caughtUp = transcriptFacts(restored);
    if (caughtUp !== undefined)
      session.stats = { ...session.stats, turns: session.stats.turns + caughtUp.turns };
    const repaired = repairToolPairs(session.memory.messages);
    session.memory.replaceMessages(repaired);
    const laterIds = new Set(later.map((message) => message.id));
    const repairs = repaired.filter(
      (message) => !inMemory.has(message.id) && !laterIds.has(message.id) && !inTranscript?.has(message.id),
    );
    const toAppend = [...missingFromTranscript, ...repairs];
    if (toAppend.length > 0) await this.#options.store.appendTranscript(session.key, toAppend);
    // Turns that ended after the last checkpoint are expected; a tail ending in a user message or a tool
    // call without its result (or repairs) is a turn a crash cut short.
    const last = session.memory.messages.at(-1);
    const interrupted = toAppend.length > 0 || transcript !== undefined || last?.role !== "assistant";
    const fields = { sessionKey: session.key, restored: restored.length, appended: toAppend.length };
    if (interrupted) this.#logger.warn(fields, "recovered a turn interrupted by a crash");
    else this.#logger.debug(fields, "caught up with turns in the transcript past the snapshot");
    await this.#save(session);
  }

  /** Drops sessions idle for longer than the limit (they stay on disk). */
  unloadIdle(): number {
    const cutoff = this.#clock() - this.#options.limits.idleUnloadMs;
    let unloaded = 0;
    for (const [key, session] of this.#sessions) {
      const lane = this.#options.scheduler.stats().byKey(key);
      if (session.lastUsed < cutoff && !lane.running && lane.queued === 0) {
        this.#sessions.delete(key);
        this.#events?.publish({ type: "session-unloaded", sessionKey: key });
        // Turns only in the transcript get their snapshot (in the session's lane, so before any next turn
        // loads it again); without it the next load would replay them from the transcript.
        if ((session.checkpoint?.turnsSince ?? 0) > 0) this.#checkpoint(session);
        unloaded += 1;
      }
    }
    if (unloaded > 0) this.#logger.debug({ unloaded }, "unloaded idle sessions");
    return unloaded;
  }

  /** Writes the snapshot of an unloaded session whose last turns are only in the transcript, in its lane. */
  #checkpoint(session: LoadedSession): void {
    this.#options.scheduler
      .run(session.key, async () => {
        if ((session.checkpoint?.turnsSince ?? 0) > 0) await this.#save(session);
      })
      .catch((error: unknown) =>
        this.#logger.warn({ err: error, sessionKey: session.key }, "could not checkpoint an idle session"),
      );
  }

  /** Stored sessions, most recent first (loaded ones with their current stats). */
  async list(): Promise<SessionSummary[]> {
    const summaries = await this.#options.store.list();
    return summaries
      .map((summary) => {
        const session = this.#sessions.get(summary.key);
        if (session === undefined || (session.checkpoint?.turnsSince ?? 0) === 0) return summary;
        return { ...summary, updatedAt: session.stats.lastActivity, stats: session.stats };
      })
      .sort((a, b) => b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * One session's full state, or undefined when it does not exist. A session whose snapshot is missing or
   * unusable but whose transcript exists is rebuilt from the transcript (and loaded) first.
   */
  async get(key: string): Promise<SessionDetail | undefined> {
    parseSessionKey(key);
    let session = this.#sessions.get(key);
    let loaded = session !== undefined;
    if (!session) {
      const result = await readUsableSnapshot(this.#options.store, key);
      const current =
        result.status === "ok" &&
        result.unseen.length === 0 &&
        !result.transcriptBehind &&
        result.snapshot.stats.openTurn === undefined;
      if (result.status === "ok" && !current) {
        session = await this.#acquire(key, undefined);
        loaded = true;
      } else if (result.status === "ok") {
        session = {
          key,
          createdAt: result.snapshot.createdAt,
          runtime: await this.#openRuntime(key),
          memory: result.memory,
          stats: result.snapshot.stats,
          lastUsed: this.#clock(),
        };
      } else {
        if (!(await hasTranscript(this.#options.store, key))) return undefined;
        session = await this.#acquire(key, undefined);
        loaded = true;
      }
    }
    return {
      key,
      loaded,
      stats: session.stats,
      summary: session.memory.summary,
      messages: session.memory.messages,
      contextTokens: this.#contextTokens(session),
      contextWindow: this.#options.limits.contextWindow,
      queued: this.#options.scheduler.stats().byKey(key).queued,
    };
  }

  /** Archives a session's files (a reset); runs in its lane so no turn is cut in half. */
  async reset(key: string): Promise<boolean> {
    parseSessionKey(key);
    return this.#options.scheduler.run(key, async () => {
      this.#sessions.delete(key);
      const reset = (await this.#options.store.archive(key)).length > 0;
      if (reset) this.#events?.publish({ type: "session-reset", sessionKey: key });
      return reset;
    });
  }

  /** Deletes a session's files for good; runs in its lane. */
  async delete(key: string): Promise<boolean> {
    parseSessionKey(key);
    return this.#options.scheduler.run(key, async () => {
      this.#sessions.delete(key);
      const deleted = await this.#options.store.delete(key);
      if (deleted) this.#events?.publish({ type: "session-deleted", sessionKey: key });
      return deleted;
    });
  }

  /** Stops the idle sweeper and releases the store's open files (the scheduler is closed by the server). */
  async close(): Promise<void> {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    await this.#options.store.close();
  }
}

function checkpointOf(memory: WorkingMemory): Checkpoint {
  return { messages: memory.messages, summary: memory.summary, counters: memory.counters, turnsSince: 0 };
}

/** True when `memory` differs from the checkpoint only by messages appended after its own. */
function onlyAppended(saved: Checkpoint, memory: WorkingMemory): boolean {
  if (memory.summary !== saved.summary) return false;
  const { messages } = memory;
  if (messages.length < saved.messages.length) return false;
  for (const [index, message] of saved.messages.entries()) if (messages[index] !== message) return false;
  // The provider ratio is re-learnt from the next reported usage: a crash losing its last updates costs nothing.
  const { counters } = memory;
  const names = new Set([...Object.keys(counters), ...Object.keys(saved.counters)]);
  for (const name of names)
    if (name !== compactionCounters.tokenRatio && counters[name] !== saved.counters[name]) return false;
  return true;
}
