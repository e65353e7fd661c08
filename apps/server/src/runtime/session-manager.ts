import { compactionStateOf } from "@almanac/compaction";
import { type Logger, type Message, parseSessionKey, silentLogger, UserError } from "@almanac/core";
import type { EventBus, RunningTurn } from "../events/event-bus.js";
import type { SessionSummary } from "../sessions/session.js";
import { type ChatCommand, HELP_TEXT, parseCommand } from "./commands.js";
import type { Conversation } from "./conversation.js";
import { createSessionLoader, type SessionLoader } from "./session-loader.js";
import { compactionLine, historyReport, statusReport } from "./session-reports.js";
import type {
  SessionDetail,
  SessionManagerOptions,
  TurnOutcomeLabel,
  TurnRequest,
  TurnResult,
} from "./session-types.js";
import type { TurnRunner } from "./turn-runner.js";

export type {
  SessionDetail,
  SessionManagerOptions,
  TurnRequest,
  TurnResult,
} from "./session-types.js";

/** A turn running in its lane: what the live console shows, and how a stop request reaches it. */
interface ActiveTurn {
  readonly turn: RunningTurn;
  /** Aborted by {@link SessionManager.stop}; only replies listen to it. */
  readonly stop: AbortController;
}

/**
 * Routes every conversation to its session: loads sessions on demand (see `SessionLoader`, which also tells
 * how a crash is repaired), runs one turn or command at a time per session through the lane scheduler, and
 * unloads idle sessions. What belongs to one session (memory, stats, agent, compactor, meter, persistence)
 * is its {@link Conversation}'s; the manager delegates to it.
 */
export class SessionManager {
  readonly #options: SessionManagerOptions;
  readonly #logger: Logger;
  readonly #clock: () => number;
  readonly #loader: SessionLoader;
  readonly #sessions = new Map<string, Conversation>();
  readonly #loading = new Map<string, Promise<Conversation>>();
  /** The turn running in each session's lane (one at most per session). */
  readonly #running = new Map<string, ActiveTurn>();
  readonly #events: EventBus | undefined;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(options: SessionManagerOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? Date.now;
    this.#events = options.events;
    this.#loader = createSessionLoader({
      store: options.store,
      runner: options.runner,
      tokenCounter: options.tokenCounter,
      contextWindow: options.limits.contextWindow,
      lifecycle: options.lifecycle,
      clock: this.#clock,
      logger: this.#logger,
    });
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
    return [...this.#sessions.values()].map((session) => session.contextTokens());
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
    // An answer to an approval is taken at once: the session's lane is busy with the turn that waits for it.
    const answered = this.#options.approvals?.answer(inbound);
    if (answered !== undefined) {
      this.#options.observer?.turnEnded?.(inbound.channel, "command", 0);
      return {
        sessionKey: inbound.sessionKey,
        kind: "command",
        text: answered,
        usage: { promptTokens: 0, completionTokens: 0 },
      };
    }
    const command = parseCommand(inbound.text);
    const runner = this.#options.runner;
    if (command === undefined && runner === undefined) {
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
              : await (runner as TurnRunner).run(session, request, {
                  lane: laneSignal,
                  stop: active.stop.signal,
                });
          return turnResult;
        } finally {
          session.touch();
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
  #end(session: Conversation, active: ActiveTurn, result: TurnResult | undefined): void {
    if (this.#running.get(session.key) === active) this.#running.delete(session.key);
    const events = this.#events;
    if (!events?.active) return;
    const { turn } = active;
    // `/new` and resets drop the session from memory: its numbers are gone with it.
    const figures = this.#sessions.get(session.key) === session ? session.figures() : undefined;
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

  async #runCommand(session: Conversation, command: ChatCommand): Promise<TurnResult> {
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
        const transcript: Message[] = [];
        for await (const message of session.stored.history()) transcript.push(message);
        await this.#options.lifecycle?.sessionEnded?.(session.key, transcript);
        const archived = await session.stored.reset();
        this.#sessions.delete(session.key);
        this.#logger.info({ sessionKey: session.key, archived }, "session reset by /new");
        this.#events?.publish({ type: "session-reset", sessionKey: session.key });
        return reply("Started a new conversation. The previous one is archived with its full transcript.");
      }
      case "status":
        return reply(
          [
            statusReport({
              ...session.report(),
              model:
                this.#options.runner?.modelName ??
                `not configured (set ${this.#options.missingModelSettings.join(", ")})`,
              queued: this.#options.scheduler.stats().byKey(session.key).queued,
            }),
            ...((await this.#options.lifecycle?.statusLines?.()) ?? []),
          ].join("\n"),
        );
      case "history":
        return reply(historyReport(session.report()));
      case "compact":
        return reply(
          (await session.compact(command.focus)) ?? "Compaction needs a model; none is configured yet.",
        );
    }
  }

  async #acquire(key: string, channel: string | undefined): Promise<Conversation> {
    const loaded = this.#sessions.get(key);
    if (loaded) return loaded;
    let pending = this.#loading.get(key);
    if (!pending) {
      pending = this.#loader
        .load(key, channel)
        .then(({ conversation, created }) => {
          if (created) this.#events?.publish({ type: "session-created", sessionKey: key });
          return conversation;
        })
        .finally(() => this.#loading.delete(key));
      this.#loading.set(key, pending);
    }
    const session = await pending;
    if (!this.#sessions.has(key)) this.#events?.publish({ type: "session-loaded", sessionKey: key });
    this.#sessions.set(key, session);
    return session;
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
        if (session.turnsSinceCheckpoint > 0) this.#checkpoint(session);
        unloaded += 1;
      }
    }
    if (unloaded > 0) this.#logger.debug({ unloaded }, "unloaded idle sessions");
    return unloaded;
  }

  /** Writes the snapshot of an unloaded session whose last turns are only in the transcript, in its lane. */
  #checkpoint(session: Conversation): void {
    this.#options.scheduler
      .run(session.key, async () => {
        if (session.turnsSinceCheckpoint > 0) await session.save();
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
        if (session === undefined || session.turnsSinceCheckpoint === 0) return summary;
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
      const stored = await this.#loader.peek(key);
      if (stored === undefined) return undefined;
      loaded = stored === "load";
      session = stored === "load" ? await this.#acquire(key, undefined) : stored;
    }
    return {
      key,
      loaded,
      stats: session.stats,
      summary: session.memory.summary,
      messages: session.memory.messages,
      contextTokens: session.contextTokens(),
      contextWindow: this.#options.limits.contextWindow,
      compaction: { ...compactionStateOf(session.memory), detail: compactionLine(session.memory) },
      queued: this.#options.scheduler.stats().byKey(key).queued,
    };
  }

  /** Archives a session's files (a reset); runs in its lane so no turn is cut in half. */
  async reset(key: string): Promise<boolean> {
    parseSessionKey(key);
    return this.#options.scheduler.run(key, async () => {
      this.#sessions.delete(key);
      const reset = (await this.#loader.session(key).reset()).length > 0;
      if (reset) this.#events?.publish({ type: "session-reset", sessionKey: key });
      return reset;
    });
  }

  /** Deletes a session's files for good; runs in its lane. */
  async delete(key: string): Promise<boolean> {
    parseSessionKey(key);
    return this.#options.scheduler.run(key, async () => {
      this.#sessions.delete(key);
      const deleted = await this.#loader.session(key).delete();
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
