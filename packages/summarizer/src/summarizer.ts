import { createAgent, createToolkit, WorkingMemory } from "@almanac/agent";
import {
  type ChatModel,
  createMessage,
  type Logger,
  messageText,
  silentLogger,
  type TokenCounter,
} from "@almanac/core";
import {
  assertTimeZone,
  createMemoryFileStore,
  type DayGroup,
  dailyLogPath,
  defaultTimeZone,
  groupMessagesByLocalDate,
  hashContent,
  type MemoryFileStore,
  type MemoryScope,
  OWNER_SCOPE,
  type ShrinkGuard,
  type StagedMemoryFile,
  stageMemoryFile,
  withoutForgotten,
} from "@almanac/memory-files";
import { createDayLogTools } from "./day-log-tools.js";
import { type CommitRecord, type DoneDay, finishCommit, JobCheckpoint } from "./job-checkpoint.js";
import { renderTranscript, type TranscriptLimits } from "./render-transcript.js";
import {
  countRequest,
  createStepGuard,
  isOverflowError,
  passRoom,
  resolveSummarizerBudget,
  type SummarizerBudget,
  splitEntry,
} from "./summarizer-budget.js";
import { SummarizerError } from "./summarizer-error.js";
import { buildSummarizerInput, SUMMARIZER_PROMPT } from "./summarizer-prompt.js";
import type { JobOutcome, SummaryJob, SummaryJobContext, SummaryJobRunner } from "./summary-job.js";

/** Options of {@link createSummarizer}. */
export interface SummarizerOptions {
  /** The model the summarizer agent uses (may differ from the chat model). */
  readonly model: ChatModel;
  /** The workspace holding `memory/`. */
  readonly workspace: string;
  /** The state directory (backups of rewritten logs). */
  readonly stateDir: string;
  /** Shared store (e.g. the one the admin API uses); default: one over `workspace` and `stateDir`. */
  readonly store?: MemoryFileStore;
  /** IANA zone deciding which day a message belongs to. Default: the server's zone. */
  readonly timeZone?: string;
  readonly tokenCounter: TokenCounter;
  readonly logger?: Logger;
  /** Milliseconds since the epoch. Default `Date.now`. */
  readonly clock?: () => number;
  /** Reasoning steps per pass. Default 12. */
  readonly maxIterations?: number;
  /**
   * Most transcript tokens per pass; a longer day is merged in several passes. Default 8000. Each pass is
   * also sized to fit the window: system prompt, tools, the log as read, the agent's steps and the output cap.
   */
  readonly maxTranscriptTokens?: number;
  /** The summarizer model's context window in tokens. Default: the model's own, else 128,000. */
  readonly contextWindow?: number;
  /** Output cap of each summarizer step, kept free in the window. Default 4,096, at most a quarter of the window. */
  readonly maxOutputTokens?: number;
  /** Times a day is merged again when a person edited its log before the commit. Default 3. */
  readonly maxConflictRetries?: number;
  readonly transcriptLimits?: TranscriptLimits;
  readonly shrinkGuard?: ShrinkGuard;
  /**
   * What the owner asked to forget (normalized phrases): a line of a daily log that mentions one is never
   * committed, so a transcript that still holds the fact cannot write it back.
   */
  readonly forgotten?: () => readonly string[];
  /**
   * The memory scope of a job's conversation, from its session key: the owner's conversations go to
   * `memory/YYYY-MM-DD.md`, a shared chat's to its own `shared/<folder>/YYYY-MM-DD.md`. Default: the owner.
   */
  readonly scopeOf?: (sessionKey: string) => MemoryScope;
}

/**
 * Creates the summarizer: the queue's job runner. Per local day of the job's messages, a small
 * tool-using agent merges the conversation into `memory/YYYY-MM-DD.md` on a staged copy; the result
 * is committed once, after a commit record is journaled, so a crash never applies it twice.
 */
export function createSummarizer(options: SummarizerOptions): SummaryJobRunner {
  const summarizer = new DailyLogSummarizer(options);
  return (job, context) => summarizer.run(job, context);
}

/** What one pass tells the agent, before the messages are chosen. */
interface PassFrame {
  readonly stage: StagedMemoryFile;
  readonly job: SummaryJob;
  readonly date: string;
}

/** One run of a job: the scope its conversation belongs to, its log lines and its saved progress. */
interface JobRun {
  readonly job: SummaryJob;
  readonly scope: MemoryScope;
  readonly logger: Logger;
  readonly checkpoint: JobCheckpoint;
  readonly signal: AbortSignal;
}

/** The runner behind {@link createSummarizer}: merges each day of a job in passes, then commits it once. */
class DailyLogSummarizer {
  /** Read when used (the scope, the forgotten phrases, the step limit), as the caller gave them. */
  readonly #options: SummarizerOptions;
  // The store and the agent bind their own `component`; they get the unbound logger so no line repeats the key.
  readonly #partLogger: Logger;
  readonly #logger: Logger;
  readonly #clock: () => number;
  readonly #timeZone: string;
  readonly #maxTranscriptTokens: number;
  readonly #maxConflictRetries: number;
  readonly #store: MemoryFileStore;
  readonly #model: ChatModel;
  readonly #tokenCounter: TokenCounter;
  readonly #budget: SummarizerBudget;

  constructor(options: SummarizerOptions) {
    this.#options = options;
    this.#partLogger = options.logger ?? silentLogger;
    this.#logger = this.#partLogger.child({ component: "summarizer" });
    this.#clock = options.clock ?? Date.now;
    this.#timeZone = options.timeZone ?? defaultTimeZone();
    assertTimeZone(this.#timeZone);
    this.#maxTranscriptTokens = options.maxTranscriptTokens ?? 8000;
    this.#maxConflictRetries = options.maxConflictRetries ?? 3;
    this.#store =
      options.store ??
      createMemoryFileStore({
        workspace: options.workspace,
        stateDir: options.stateDir,
        logger: this.#partLogger,
        clock: this.#clock,
      });
    this.#model = options.model;
    this.#tokenCounter = options.tokenCounter;
    this.#budget = resolveSummarizerBudget(
      options.contextWindow ?? this.#model.contextWindow ?? 128_000,
      options.maxOutputTokens,
    );
  }

  /** Runs a job: each local day of its messages merged and committed, the days done skipped on a rerun. */
  async run(job: SummaryJob, context: SummaryJobContext): Promise<JobOutcome> {
    const checkpoint = new JobCheckpoint(context);
    // Decided per job from its session key, so a group's conversation never lands in the owner's logs.
    const scope = this.#options.scopeOf?.(job.sessionKey) ?? OWNER_SCOPE;
    const run: JobRun = {
      job,
      scope,
      logger: this.#logger.child({ jobId: job.id }),
      checkpoint,
      signal: context.signal,
    };
    const groups = groupMessagesByLocalDate(job.messages, this.#timeZone, job.createdAt);
    const results: Array<{ readonly date: string; readonly done: DoneDay }> = [];
    for (const group of groups) {
      results.push({ date: group.date, done: await this.#summarizeDay(run, group) });
    }
    return {
      note: results.map(({ date, done }) => `${date}: ${done.note}`).join("\n") || "no messages",
      changedFiles: results.filter(({ done }) => done.changed).map(({ done }) => done.path),
    };
  }

  async #summarizeDay(run: JobRun, group: DayGroup): Promise<DoneDay> {
    const { job, checkpoint } = run;
    const path = dailyLogPath(run.scope, group.date);
    const pending = checkpoint.day(group.date);
    if (pending?.status === "done") return pending;
    if (pending?.status === "committing") {
      const finished = await finishCommit(this.#store, pending);
      if (finished !== undefined) {
        run.logger.info({ path }, "finished a commit journaled before an interruption");
        await checkpoint.saveDay(group.date, finished);
        return finished;
      }
      run.logger.warn({ path }, "log edited since the journaled commit; merging again");
      await checkpoint.saveDay(group.date, undefined);
    }
    const entries = renderTranscript(group.messages, this.#timeZone, this.#options.transcriptLimits);
    if (entries.length === 0) return { status: "done", path, changed: false, note: "no text to merge" };
    for (let round = 0; round <= this.#maxConflictRetries; round += 1) {
      const stage = stageMemoryFile(path, await this.#store.tryRead(path), {
        initialContent: `# ${group.date}\n`,
        ...(this.#options.shrinkGuard === undefined ? {} : { shrinkGuard: this.#options.shrinkGuard }),
      });
      const notes = await this.#mergeDay({ stage, job, date: group.date }, entries, run.signal);
      const note = notes.filter((text) => text !== "").join(" ") || "done";
      if (!stage.changed()) {
        const done: DoneDay = { status: "done", path, changed: false, note };
        await checkpoint.saveDay(group.date, done);
        return done;
      }
      const content = withoutForgotten(stage.content(), this.#options.forgotten?.() ?? []).content;
      const commit: CommitRecord = {
        status: "committing",
        path,
        baseHash: stage.baseHash,
        content,
        hash: hashContent(content),
      };
      await checkpoint.saveDay(group.date, commit);
      const finished = await finishCommit(this.#store, commit);
      if (finished !== undefined) {
        const done: DoneDay = { ...finished, note };
        await checkpoint.saveDay(group.date, done);
        return done;
      }
      run.logger.info(
        { path, round: round + 1 },
        "log edited during the merge; merging again on the new content",
      );
      await checkpoint.saveDay(group.date, undefined);
    }
    throw new SummarizerError(
      "summarizer.conflict",
      `${path} kept changing while the summarizer merged into it (${this.#maxConflictRetries + 1} tries); will try again later.`,
      { isRetryable: true },
    );
  }

  /**
   * Merges a day's entries in passes, each sized from the window and the log as it is then. A pass that
   * overflows anyway (the provider counts differently, or the agent's steps grew) is undone and its part
   * merged again in two halves; an overflow never fails the job.
   */
  async #mergeDay(frame: PassFrame, entries: readonly string[], signal: AbortSignal): Promise<string[]> {
    const tokenCounter = this.#tokenCounter;
    const notes: string[] = [];
    const pending = [...entries];
    const total = (list: readonly string[]) =>
      list.reduce((sum, entry) => sum + tokenCounter.countText(entry) + 1, 0);
    // Parts split after an overflow; they go before the rest of the day.
    const redo: string[][] = [];
    let part = 0;
    while (redo.length > 0 || pending.length > 0) {
      part += 1;
      const room = this.#roomFor(frame, part);
      const limit = Math.min(this.#maxTranscriptTokens, room.partTokens);
      let chunk = redo.shift();
      if (chunk === undefined) {
        chunk = [];
        let used = 0;
        while (pending.length > 0) {
          const entry = pending[0] as string;
          const cost = tokenCounter.countText(entry) + 1;
          if (cost > limit) {
            if (chunk.length > 0) break;
            pending.splice(0, 1, ...splitEntry(entry, limit - 1, tokenCounter));
            continue;
          }
          if (used + cost > limit) break;
          chunk.push(entry);
          used += cost;
          pending.shift();
        }
      }
      const parts = part + redo.length + Math.ceil(total(pending) / limit);
      const before = frame.stage.content();
      try {
        notes.push(await this.#mergePass(frame, chunk, part, parts, room.logViewTokens, signal));
      } catch (error) {
        if (signal.aborted || !isOverflowError(error)) throw error;
        frame.stage.restore(before);
        part -= 1;
        const halves =
          chunk.length > 1
            ? [chunk.slice(0, Math.ceil(chunk.length / 2)), chunk.slice(Math.ceil(chunk.length / 2))]
            : splitEntry(chunk[0] ?? "", Math.floor(total(chunk) / 2), tokenCounter).map((piece) => [piece]);
        // A part already small is not what overflows (the log or the instructions are): give up on it.
        if (halves.length < 2 || total(chunk) < Math.max(32, this.#budget.promptBudget / 16)) throw error;
        this.#logger.warn(
          { date: frame.date, entries: chunk.length, tokens: total(chunk) },
          "a summarizer pass overflowed the window; merging its part again in two halves",
        );
        redo.unshift(...halves);
      }
    }
    return notes;
  }

  async #mergePass(
    frame: PassFrame,
    entries: readonly string[],
    part: number,
    parts: number,
    logViewTokens: number,
    signal: AbortSignal,
  ): Promise<string> {
    const agent = createAgent({
      model: this.#model,
      toolkit: this.#passTools(frame.stage, logViewTokens),
      beforeModelCall: [createStepGuard(this.#tokenCounter, this.#budget)],
      systemPrompt: SUMMARIZER_PROMPT,
      maxIterations: this.#options.maxIterations ?? 12,
      maxOutputTokens: this.#budget.maxOutputTokens,
      logger: this.#partLogger,
      clock: this.#clock,
    });
    const input = this.#passInput(frame, entries, part, parts);
    const result = await agent.run({ memory: new WorkingMemory(), input, signal });
    if (result.stopReason === "max_iterations")
      this.#logger.warn({ date: frame.date, part }, "summarizer pass hit its step limit");
    return messageText(result.reply).trim();
  }

  /** How many transcript tokens the next pass may take, and how much of the log it may show. */
  #roomFor(frame: PassFrame, part: number) {
    // The fixed part: the request with an empty list of messages (a part number as long as any).
    const probe = this.#passInput(frame, [], part, part + 99);
    const fixed = countRequest(
      this.#tokenCounter,
      SUMMARIZER_PROMPT,
      [probe],
      this.#passTools(frame.stage, 1).specs(),
    );
    return passRoom(this.#budget, fixed, this.#tokenCounter.countText(frame.stage.content()));
  }

  /** The tools of a pass over `stage`, the log read through a view of at most `logViewTokens`. */
  #passTools(stage: StagedMemoryFile, logViewTokens: number) {
    return createToolkit(createDayLogTools(stage, { counter: this.#tokenCounter, maxTokens: logViewTokens }));
  }

  #passInput(frame: PassFrame, entries: readonly string[], part: number, parts: number) {
    return createMessage({
      role: "user",
      timestamp: this.#clock(),
      content: buildSummarizerInput({
        date: frame.date,
        timeZone: this.#timeZone,
        path: frame.stage.path,
        sessionKey: frame.job.sessionKey,
        reason: frame.job.reason,
        ...(frame.job.summary === undefined ? {} : { summary: frame.job.summary }),
        entries,
        part,
        parts,
      }),
    });
  }
}
