import { createAgent, createToolkit, WorkingMemory } from "@almanac/agent";
import {
  type ChatModel,
  createMessage,
  isAlmanacError,
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
import { z } from "zod";
import { createDayLogTools } from "./day-log-tools.js";
import { renderTranscript, type TranscriptLimits } from "./render-transcript.js";
import {
  countRequest,
  createStepGuard,
  isOverflowError,
  passRoom,
  resolveSummarizerBudget,
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

const dayProgressSchema = z.discriminatedUnion("status", [
  z.object({
    status: z.literal("committing"),
    path: z.string(),
    baseHash: z.string().nullable(),
    content: z.string(),
    hash: z.string(),
  }),
  z.object({ status: z.literal("done"), path: z.string(), changed: z.boolean(), note: z.string() }),
]);

type DayProgress = z.infer<typeof dayProgressSchema>;
type DoneDay = Extract<DayProgress, { status: "done" }>;
type CommitRecord = Extract<DayProgress, { status: "committing" }>;

const checkpointSchema = z.object({ version: z.literal(1), days: z.record(z.string(), dayProgressSchema) });

type Checkpoint = z.infer<typeof checkpointSchema>;

function parseCheckpoint(value: unknown): Checkpoint {
  if (value === undefined) return { version: 1, days: {} };
  const parsed = checkpointSchema.safeParse(value);
  if (!parsed.success) {
    throw new SummarizerError(
      "summarizer.checkpoint_invalid",
      "The job's saved progress is damaged; it is not rerun blindly (that could write its facts twice).",
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/**
 * Creates the summarizer: the queue's job runner. Per local day of the job's messages, a small
 * tool-using agent merges the conversation into `memory/YYYY-MM-DD.md` on a staged copy; the result
 * is committed once, after a commit record is journaled, so a crash never applies it twice.
 */
export function createSummarizer(options: SummarizerOptions): SummaryJobRunner {
  // The store and the agent bind their own `component`; they get the unbound logger so no line repeats the key.
  const partLogger = options.logger ?? silentLogger;
  const logger = partLogger.child({ component: "summarizer" });
  const clock = options.clock ?? Date.now;
  const timeZone = options.timeZone ?? defaultTimeZone();
  assertTimeZone(timeZone);
  const maxTranscriptTokens = options.maxTranscriptTokens ?? 8000;
  const maxConflictRetries = options.maxConflictRetries ?? 3;
  const store =
    options.store ??
    createMemoryFileStore({
      workspace: options.workspace,
      stateDir: options.stateDir,
      logger: partLogger,
      clock,
    });
  const { model, tokenCounter } = options;

  const budget = resolveSummarizerBudget(
    options.contextWindow ?? model.contextWindow ?? 128_000,
    options.maxOutputTokens,
  );

  /** What one pass tells the agent, before the messages are chosen. */
  interface PassFrame {
    readonly stage: StagedMemoryFile;
    readonly job: SummaryJob;
    readonly date: string;
  }

  const passInput = (frame: PassFrame, entries: readonly string[], part: number, parts: number) =>
    createMessage({
      role: "user",
      timestamp: clock(),
      content: buildSummarizerInput({
        date: frame.date,
        timeZone,
        path: frame.stage.path,
        sessionKey: frame.job.sessionKey,
        reason: frame.job.reason,
        ...(frame.job.summary === undefined ? {} : { summary: frame.job.summary }),
        entries,
        part,
        parts,
      }),
    });

  /** The tools of a pass over `stage`, the log read through a view of at most `logViewTokens`. */
  const passTools = (stage: StagedMemoryFile, logViewTokens: number) =>
    createToolkit(createDayLogTools(stage, { counter: tokenCounter, maxTokens: logViewTokens }));

  /** How many transcript tokens the next pass may take, and how much of the log it may show. */
  const roomFor = (frame: PassFrame, part: number) => {
    // The fixed part: the request with an empty list of messages (a part number as long as any).
    const probe = passInput(frame, [], part, part + 99);
    const fixed = countRequest(tokenCounter, SUMMARIZER_PROMPT, [probe], passTools(frame.stage, 1).specs());
    return passRoom(budget, fixed, tokenCounter.countText(frame.stage.content()));
  };

  const mergePass = async (
    frame: PassFrame,
    entries: readonly string[],
    part: number,
    parts: number,
    logViewTokens: number,
    signal: AbortSignal,
  ) => {
    const agent = createAgent({
      model,
      toolkit: passTools(frame.stage, logViewTokens),
      beforeModelCall: [createStepGuard(tokenCounter, budget)],
      systemPrompt: SUMMARIZER_PROMPT,
      maxIterations: options.maxIterations ?? 12,
      maxOutputTokens: budget.maxOutputTokens,
      logger: partLogger,
      clock,
    });
    const input = passInput(frame, entries, part, parts);
    const result = await agent.run({ memory: new WorkingMemory(), input, signal });
    if (result.stopReason === "max_iterations")
      logger.warn({ date: frame.date, part }, "summarizer pass hit its step limit");
    return messageText(result.reply).trim();
  };

  /**
   * Merges a day's entries in passes, each sized from the window and the log as it is then. A pass that
   * overflows anyway (the provider counts differently, or the agent's steps grew) is undone and its part
   * merged again in two halves; an overflow never fails the job.
   */
  const mergeDay = async (frame: PassFrame, entries: readonly string[], signal: AbortSignal) => {
    const notes: string[] = [];
    const pending = [...entries];
    const total = (list: readonly string[]) =>
      list.reduce((sum, entry) => sum + tokenCounter.countText(entry) + 1, 0);
    // Parts split after an overflow; they go before the rest of the day.
    const redo: string[][] = [];
    let part = 0;
    while (redo.length > 0 || pending.length > 0) {
      part += 1;
      const room = roomFor(frame, part);
      const limit = Math.min(maxTranscriptTokens, room.partTokens);
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
        notes.push(await mergePass(frame, chunk, part, parts, room.logViewTokens, signal));
      } catch (error) {
        if (signal.aborted || !isOverflowError(error)) throw error;
        frame.stage.restore(before);
        part -= 1;
        const halves =
          chunk.length > 1
            ? [chunk.slice(0, Math.ceil(chunk.length / 2)), chunk.slice(Math.ceil(chunk.length / 2))]
            : splitEntry(chunk[0] ?? "", Math.floor(total(chunk) / 2), tokenCounter).map((piece) => [piece]);
        // A part already small is not what overflows (the log or the instructions are): give up on it.
        if (halves.length < 2 || total(chunk) < Math.max(32, budget.promptBudget / 16)) throw error;
        logger.warn(
          { date: frame.date, entries: chunk.length, tokens: total(chunk) },
          "a summarizer pass overflowed the window; merging its part again in two halves",
        );
        redo.unshift(...halves);
      }
    }
    return notes;
  };

  /** Finishes a journaled commit: applies it unless already applied; `undefined` when a person changed the file since. */
  const finishCommit = async (commit: CommitRecord): Promise<DoneDay | undefined> => {
    const current = await store.tryRead(commit.path);
    const currentHash = current?.hash ?? null;
    if (currentHash === commit.hash)
      return { status: "done", path: commit.path, changed: true, note: "committed" };
    if (currentHash !== commit.baseHash) return undefined;
    try {
      await store.write(commit.path, commit.content, { expectedHash: commit.baseHash });
    } catch (error) {
      if (isAlmanacError(error) && error.code === "memory.conflict") return undefined;
      throw error;
    }
    return { status: "done", path: commit.path, changed: true, note: "committed" };
  };

  return async (job: SummaryJob, context: SummaryJobContext): Promise<JobOutcome> => {
    let checkpoint = parseCheckpoint(context.checkpoint);
    // Decided per job from its session key, so a group's conversation never lands in the owner's logs.
    const scope = options.scopeOf?.(job.sessionKey) ?? OWNER_SCOPE;
    const jobLogger = logger.child({ jobId: job.id });
    const saveDay = async (date: string, progress: DayProgress | undefined) => {
      const days = { ...checkpoint.days };
      if (progress === undefined) delete days[date];
      else days[date] = progress;
      checkpoint = { version: 1, days };
      await context.saveCheckpoint(checkpoint);
    };

    const summarizeDay = async (group: DayGroup): Promise<DoneDay> => {
      const path = dailyLogPath(scope, group.date);
      const pending = checkpoint.days[group.date];
      if (pending?.status === "done") return pending;
      if (pending?.status === "committing") {
        const finished = await finishCommit(pending);
        if (finished !== undefined) {
          jobLogger.info({ path }, "finished a commit journaled before an interruption");
          await saveDay(group.date, finished);
          return finished;
        }
        jobLogger.warn({ path }, "log edited since the journaled commit; merging again");
        await saveDay(group.date, undefined);
      }
      const entries = renderTranscript(group.messages, timeZone, options.transcriptLimits);
      if (entries.length === 0) return { status: "done", path, changed: false, note: "no text to merge" };
      for (let round = 0; round <= maxConflictRetries; round += 1) {
        const stage = stageMemoryFile(path, await store.tryRead(path), {
          initialContent: `# ${group.date}\n`,
          ...(options.shrinkGuard === undefined ? {} : { shrinkGuard: options.shrinkGuard }),
        });
        const notes = await mergeDay({ stage, job, date: group.date }, entries, context.signal);
        const note = notes.filter((text) => text !== "").join(" ") || "done";
        if (!stage.changed()) {
          const done: DoneDay = { status: "done", path, changed: false, note };
          await saveDay(group.date, done);
          return done;
        }
        const content = withoutForgotten(stage.content(), options.forgotten?.() ?? []).content;
        const commit: CommitRecord = {
          status: "committing",
          path,
          baseHash: stage.baseHash,
          content,
          hash: hashContent(content),
        };
        await saveDay(group.date, commit);
        const finished = await finishCommit(commit);
        if (finished !== undefined) {
          const done: DoneDay = { ...finished, note };
          await saveDay(group.date, done);
          return done;
        }
        jobLogger.info(
          { path, round: round + 1 },
          "log edited during the merge; merging again on the new content",
        );
        await saveDay(group.date, undefined);
      }
      throw new SummarizerError(
        "summarizer.conflict",
        `${path} kept changing while the summarizer merged into it (${maxConflictRetries + 1} tries); will try again later.`,
        { isRetryable: true },
      );
    };

    const groups = groupMessagesByLocalDate(job.messages, timeZone, job.createdAt);
    const results: Array<{ readonly date: string; readonly done: DoneDay }> = [];
    for (const group of groups) {
      results.push({ date: group.date, done: await summarizeDay(group) });
    }
    return {
      note: results.map(({ date, done }) => `${date}: ${done.note}`).join("\n") || "no messages",
      changedFiles: results.filter(({ done }) => done.changed).map(({ done }) => done.path),
    };
  };
}
