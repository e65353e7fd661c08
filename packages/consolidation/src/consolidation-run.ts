import { createAgent, createToolkit, WorkingMemory } from "@almanac/agent";
import {
  type ChatModel,
  createMessage,
  isAlmanacError,
  type Logger,
  messageText,
  type TokenCounter,
} from "@almanac/core";
import {
  dailyLogPath,
  hashContent,
  localDateOf,
  localTimeOf,
  type MemoryFileStore,
  mentionsAny,
  OWNER_SCOPE,
  type ShrinkGuard,
  withoutForgotten,
} from "@almanac/memory-files";
import { countToolTokens } from "@almanac/tokenizer";
import { ConsolidationError } from "./consolidation-error.js";
import type { CommitRecord, ConsolidationOutcome } from "./consolidation-journal.js";
import { buildConsolidationInput, CONSOLIDATION_PROMPT, logBlockHeading } from "./consolidation-prompt.js";
import { createConsolidationTools, topicPointer } from "./consolidation-tools.js";
import { describeChanges } from "./memory-changes.js";
import {
  advanceWatermark,
  CONSOLIDATION_ENTRY_LABEL,
  findPendingLogs,
  type PendingLog,
  type Watermark,
} from "./pending-logs.js";
import { countMemoryTokens, StagedMemory, TOPIC_DIRECTORY } from "./staged-memory.js";

/** What one run needs: resolved options of the consolidator. */
export interface RunSettings {
  readonly store: MemoryFileStore;
  readonly model: ChatModel;
  readonly tokenCounter: TokenCounter;
  readonly timeZone: string;
  /** MEMORY.md's budget in tokens. */
  readonly budgetTokens: number;
  /** Normalized phrases the owner asked to forget. */
  readonly forgotten: () => readonly string[];
  readonly now: () => number;
  /** Unbound: the agent binds its own component. */
  readonly logger: Logger;
  readonly maxIterations: number;
  readonly maxInputTokens: number;
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
  readonly shrinkGuard?: ShrinkGuard;
}

/** What preparing a run gave: nothing to commit (the watermark still advances), or a commit record. */
export type PreparedRun =
  | { readonly kind: "nothing"; readonly watermark: Watermark; readonly outcome: ConsolidationOutcome }
  | { readonly kind: "commit"; readonly commit: CommitRecord };

/** Most changes listed in the day's log entry; the run's history keeps them all. */
const MAX_LOGGED_CHANGES = 40;
/** Passes that only bring MEMORY.md within its budget, after the logs were folded in. */
const TRIM_PASSES = 1;

const isPointer = (line: string) => line.startsWith(topicPointer(`${TOPIC_DIRECTORY}/`));

/** Cuts a block longer than `limit` tokens into pieces at line breaks (a single huge line by characters). */
function splitBlock(log: PendingLog, limit: number, counter: TokenCounter): string[] {
  const heading = (continued: boolean) => logBlockHeading(log.path, log.date, log.whole, continued);
  const pieces: string[] = [];
  let lines: string[] = [];
  let used = counter.countText(heading(false)) + 1;
  const flush = () => {
    if (lines.length > 0) pieces.push([heading(pieces.length > 0), ...lines].join("\n"));
    lines = [];
    used = counter.countText(heading(true)) + 1;
  };
  for (const whole of log.text.split("\n")) {
    let line = whole;
    while (counter.countText(line) + 1 > limit - used) {
      if (lines.length > 0) {
        flush();
        continue;
      }
      const room = Math.max(16, Math.floor((line.length * (limit - used - 1)) / counter.countText(line)));
      lines.push(`${line.slice(0, room)} (cut)`);
      flush();
      line = `(continued) ${line.slice(room)}`;
    }
    lines.push(line);
    used += counter.countText(line) + 1;
  }
  flush();
  return pieces;
}

/** The log blocks grouped into passes of at most `limit` tokens each. */
function passesOf(logs: readonly PendingLog[], limit: number, counter: TokenCounter): string[][] {
  const passes: string[][] = [];
  let current: string[] = [];
  let used = 0;
  for (const log of logs) {
    if (log.text === "") continue;
    for (const block of splitBlock(log, limit, counter)) {
      const cost = counter.countText(block) + 2;
      if (current.length > 0 && used + cost > limit) {
        passes.push(current);
        current = [];
        used = 0;
      }
      current.push(block);
      used += cost;
    }
  }
  if (current.length > 0) passes.push(current);
  return passes;
}

/** The day's log entry: one bullet and a sub-bullet per change. */
function logEntryText(time: string, changes: readonly string[]): string {
  const shown = changes.slice(0, MAX_LOGGED_CHANGES);
  const more = changes.length - shown.length;
  return [
    `- ${time} ${CONSOLIDATION_ENTRY_LABEL}: ${changes.length} ${changes.length === 1 ? "change" : "changes"}`,
    ...shown.map((change) => `  - ${change}`),
    ...(more > 0 ? [`  - and ${more} more (see GET /api/memory/consolidation)`] : []),
  ].join("\n");
}

/**
 * Folds what the daily logs say since `watermark` into a staged MEMORY.md (and topic files) with a tool-using
 * agent, in passes sized to the model's window, and returns the commit record. Nothing is written here.
 */
export async function prepareRun(
  settings: RunSettings,
  watermark: Watermark,
  signal: AbortSignal,
): Promise<PreparedRun> {
  const { store, tokenCounter: counter, budgetTokens, timeZone } = settings;
  const forgotten = settings.forgotten();
  const now = settings.now();
  const today = localDateOf(now, timeZone);
  const logs = await findPendingLogs(store, watermark, forgotten, today);
  const nextWatermark = advanceWatermark(watermark, logs, today);
  const folded = logs.filter((log) => log.text !== "").map((log) => log.path);
  const stage = await StagedMemory.open(store, settings.shrinkGuard);
  const tools = createToolkit(createConsolidationTools(stage, { counter, budgetTokens }));
  const memoryTokens = () => countMemoryTokens(counter, stage.memory());

  const maxOutputTokens = Math.max(
    1,
    Math.min(settings.maxOutputTokens, Math.floor(settings.contextWindow / 4)),
  );
  const frame = buildConsolidationInput({ today, timeZone, budgetTokens, blocks: [""], part: 99, parts: 99 });
  const fixed =
    3 +
    counter.countText(CONSOLIDATION_PROMPT) +
    counter.countText(frame) +
    countToolTokens(counter, tools.specs()) +
    16;
  // The agent reads MEMORY.md (and may read it again after its edits) and takes a few steps of its own.
  const memoryView = 2 * (Math.max(memoryTokens(), budgetTokens) + 64);
  const stepsReserve = Math.min(maxOutputTokens, 1024) + 256;
  const room = settings.contextWindow - maxOutputTokens - fixed - memoryView - stepsReserve;
  if (room < 128) {
    throw new ConsolidationError(
      "consolidation.window_too_small",
      `The model's window (${settings.contextWindow} tokens, ${maxOutputTokens} of them for the answer) leaves no room for log entries after the instructions, the tools and MEMORY.md (${memoryTokens()} tokens). Raise model.contextWindow, or lower model.maxOutputTokens or memory.contextTokens.`,
    );
  }
  const passes = passesOf(logs, Math.min(settings.maxInputTokens, room), counter);
  if (passes.length === 0 && memoryTokens() <= budgetTokens) {
    return {
      kind: "nothing",
      watermark: nextWatermark,
      outcome: {
        note: "Nothing new in the daily logs since the last consolidation.",
        changes: [],
        changedFiles: [],
        logs: [],
      },
    };
  }

  const notes: string[] = [];
  const runPass = async (blocks: readonly string[], part: number, parts: number) => {
    const agent = createAgent({
      model: settings.model,
      toolkit: tools,
      systemPrompt: CONSOLIDATION_PROMPT,
      maxIterations: settings.maxIterations,
      maxOutputTokens,
      logger: settings.logger,
      clock: settings.now,
    });
    const over = memoryTokens();
    const input = createMessage({
      role: "user",
      timestamp: settings.now(),
      content: buildConsolidationInput({
        today,
        timeZone,
        budgetTokens,
        blocks,
        part,
        parts,
        ...(blocks.length === 0 ? { overBudgetTokens: over } : {}),
      }),
    });
    const result = await agent.run({ memory: new WorkingMemory(), input, signal });
    if (result.stopReason === "max_iterations") {
      // Its edits so far stay staged; its last words are the agent's step-limit notice, not a summary.
      settings.logger
        .child({ component: "consolidation" })
        .warn({ part, parts }, "consolidation pass hit its step limit");
      notes.push(`Pass ${part} stopped at its step limit.`);
      return;
    }
    const note = messageText(result.reply).trim();
    if (note !== "") notes.push(note);
  };
  for (const [index, blocks] of passes.entries()) await runPass(blocks, index + 1, passes.length);
  for (let trim = 0; trim < TRIM_PASSES && memoryTokens() > budgetTokens; trim += 1) await runPass([], 1, 1);

  const files = stage
    .changedFiles()
    .map((file) => ({ ...file, content: withoutForgotten(file.content, forgotten).content }))
    .filter((file) => file.content !== file.original);
  const finalTokens = countMemoryTokens(counter, stage.memory());
  const overNote =
    finalTokens > budgetTokens
      ? ` MEMORY.md is still ${finalTokens - budgetTokens} tokens over its ${budgetTokens}-token budget.`
      : "";
  const note = (notes.join(" ") || "Done.") + overNote;
  if (files.length === 0) {
    return {
      kind: "nothing",
      watermark: nextWatermark,
      outcome: { note, changes: [], changedFiles: [], logs: folded },
    };
  }
  const changes = describeChanges(files, isPointer).filter((change) => !mentionsAny(change, forgotten));
  return {
    kind: "commit",
    commit: {
      status: "committing",
      files: files.map((file) => ({
        path: file.path,
        baseHash: file.baseHash,
        content: file.content,
        hash: hashContent(file.content),
      })),
      // Blank lines only, or only what the owner asked to forget: nothing to tell in the log.
      ...(changes.length === 0
        ? {}
        : {
            logEntry: {
              path: dailyLogPath(OWNER_SCOPE, today),
              date: today,
              text: logEntryText(localTimeOf(now, timeZone), changes),
            },
          }),
      watermark: nextWatermark,
      outcome: { note, changes, changedFiles: files.map((file) => file.path), logs: folded },
    },
  };
}

/** Times the day's log entry is appended again when the log changed between its read and its write. */
const LOG_APPEND_TRIES = 5;

/**
 * Applies a journaled commit, whatever part of it an interrupted attempt applied already: `conflict` (nothing
 * more written) when a person changed one of the files since the run read it, else `done`.
 */
export async function finishCommit(
  store: MemoryFileStore,
  commit: CommitRecord,
): Promise<"done" | "conflict"> {
  const pending: CommitRecord["files"] = [];
  for (const file of commit.files) {
    const currentHash = (await store.tryRead(file.path))?.hash ?? null;
    if (currentHash === file.hash) continue;
    if (currentHash !== file.baseHash) return "conflict";
    pending.push(file);
  }
  // Topic files first: a section moved out of MEMORY.md is in its topic file before it leaves MEMORY.md.
  for (const file of pending) {
    try {
      // The stage guarded the files together against a destructive shrink; MEMORY.md alone may shrink a lot.
      await store.write(file.path, file.content, { expectedHash: file.baseHash, allowShrink: true });
    } catch (error) {
      if (isAlmanacError(error) && error.code === "memory.conflict") return "conflict";
      throw error;
    }
  }
  if (commit.logEntry !== undefined) await appendLogEntry(store, commit.logEntry);
  return "done";
}

/** Appends the entry to the day's log once: skipped when the log holds it already (a commit finished again). */
async function appendLogEntry(
  store: MemoryFileStore,
  entry: NonNullable<CommitRecord["logEntry"]>,
): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const current = await store.tryRead(entry.path);
    if (current?.content.includes(entry.text)) return;
    const base = current?.content ?? `# ${entry.date}\n`;
    const separator = base === "" || base.endsWith("\n") ? "" : "\n";
    try {
      await store.write(entry.path, `${base}${separator}${entry.text}\n`, {
        expectedHash: current?.hash ?? null,
      });
      return;
    } catch (error) {
      // Someone (the summarizer, a person) wrote the log meanwhile: append to their version.
      if (!isAlmanacError(error) || error.code !== "memory.conflict" || attempt >= LOG_APPEND_TRIES)
        throw error;
    }
  }
}
