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
import { z } from "zod";
import { dailyLogPath, type MemoryScope, OWNER_SCOPE } from "../memory-scope.js";
import { createDayLogTools } from "./day-log-tools.js";
import { hashContent } from "./durable-file.js";
import { assertTimeZone, type DayGroup, defaultTimeZone, groupMessagesByLocalDate } from "./local-date.js";
import { createMemoryFileStore, type MemoryFileStore, type ShrinkGuard } from "./memory-file-store.js";
import { chunkTranscript, renderTranscript, type TranscriptLimits } from "./render-transcript.js";
import { type StagedMemoryFile, stageMemoryFile } from "./staged-memory-file.js";
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
  /** Transcript tokens per pass; a longer day is merged in several passes. Default 8000. */
  readonly maxTranscriptTokens?: number;
  /** Times a day is merged again when a person edited its log before the commit. Default 3. */
  readonly maxConflictRetries?: number;
  readonly transcriptLimits?: TranscriptLimits;
  readonly shrinkGuard?: ShrinkGuard;
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
  const logger = (options.logger ?? silentLogger).child({ component: "summarizer" });
  const clock = options.clock ?? Date.now;
  const timeZone = options.timeZone ?? defaultTimeZone();
  assertTimeZone(timeZone);
  const maxTranscriptTokens = options.maxTranscriptTokens ?? 8000;
  const maxConflictRetries = options.maxConflictRetries ?? 3;
  const store =
    options.store ??
    createMemoryFileStore({ workspace: options.workspace, stateDir: options.stateDir, logger, clock });
  const { model, tokenCounter } = options;

  const mergePass = async (
    stage: StagedMemoryFile,
    job: SummaryJob,
    date: string,
    entries: readonly string[],
    part: number,
    parts: number,
    signal: AbortSignal,
  ) => {
    const agent = createAgent({
      model,
      toolkit: createToolkit(createDayLogTools(stage)),
      systemPrompt: SUMMARIZER_PROMPT,
      maxIterations: options.maxIterations ?? 12,
      logger,
      clock,
    });
    const input = createMessage({
      role: "user",
      timestamp: clock(),
      content: buildSummarizerInput({
        date,
        timeZone,
        path: stage.path,
        sessionKey: job.sessionKey,
        reason: job.reason,
        ...(job.summary === undefined ? {} : { summary: job.summary }),
        entries,
        part,
        parts,
      }),
    });
    const result = await agent.run({ memory: new WorkingMemory(), input, signal });
    if (result.stopReason === "max_iterations")
      logger.warn({ date, part }, "summarizer pass hit its step limit");
    return messageText(result.reply).trim();
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
      const chunks = chunkTranscript(entries, maxTranscriptTokens, tokenCounter);
      for (let round = 0; round <= maxConflictRetries; round += 1) {
        const stage = stageMemoryFile(path, await store.tryRead(path), {
          initialContent: `# ${group.date}\n`,
          ...(options.shrinkGuard === undefined ? {} : { shrinkGuard: options.shrinkGuard }),
        });
        const notes: string[] = [];
        for (const [index, chunk] of chunks.entries()) {
          notes.push(
            await mergePass(stage, job, group.date, chunk, index + 1, chunks.length, context.signal),
          );
        }
        const note = notes.filter((text) => text !== "").join(" ") || "done";
        if (!stage.changed()) {
          const done: DoneDay = { status: "done", path, changed: false, note };
          await saveDay(group.date, done);
          return done;
        }
        const content = stage.content();
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
