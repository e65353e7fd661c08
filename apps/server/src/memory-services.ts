import { join } from "node:path";
import type { ChatModel, Logger, Message, TokenCounter } from "@almanac/core";
import {
  buildMemoryContext,
  createMemoryFileStore,
  createSummarizer,
  createSummaryQueue,
  type MemoryFileStore,
  type SummaryQueue,
} from "@almanac/memory";
import writeFileAtomic from "write-file-atomic";
import type { AlmanacConfig } from "./config/config-schema.js";

/** Long-term memory as the server uses it: the Markdown files and the summarizer queue. */
export interface MemoryServices {
  readonly store: MemoryFileStore;
  /** Absent when no model is configured (nothing to summarize with). */
  readonly queue: SummaryQueue | undefined;
  readonly timeZone: string;
  readonly workspace: string;
  /** The bounded excerpt of MEMORY.md and recent daily logs for a session's system prompt. */
  memoryContext(): Promise<string>;
  /** Journals a conversation's messages for the daily logs (no-op without a model). */
  enqueue(
    sessionKey: string,
    reason: "auto" | "command" | "overflow" | "new-session",
    messages: readonly Message[],
    summary?: string,
  ): Promise<void>;
  stop(deadlineMs: number): Promise<void>;
  /**
   * How the chat agent's file tools write: memory files (`MEMORY.md`, `memory/**.md`) go through the
   * write-safe store (backup, shrink guard), everything else is written atomically.
   */
  writeWorkspaceText(
    target: { readonly absolute: string; readonly shown: string },
    content: string,
  ): Promise<void>;
}

/** True for the files the memory store guards: `MEMORY.md` and Markdown under `memory/`. */
export function isMemoryFilePath(shown: string): boolean {
  return shown === "MEMORY.md" || (shown.startsWith("memory/") && shown.endsWith(".md"));
}

/** Creates the memory file store and, when a model is available, starts the summarizer queue. */
export async function createMemoryServices(options: {
  readonly config: AlmanacConfig;
  readonly summarizerModel: ChatModel | undefined;
  readonly tokenCounter: TokenCounter;
  readonly logger: Logger;
}): Promise<MemoryServices> {
  const { config, tokenCounter } = options;
  const logger = options.logger.child({ component: "memory" });
  const workspace = join(config.home, "workspace");
  const stateDir = join(config.home, "state");
  const timeZone = config.memory.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const store = createMemoryFileStore({ workspace, stateDir, logger });
  let queue: SummaryQueue | undefined;
  if (options.summarizerModel) {
    const run = createSummarizer({
      model: options.summarizerModel,
      workspace,
      stateDir,
      store,
      timeZone,
      tokenCounter,
      logger,
    });
    queue = createSummaryQueue({ stateDir, run, logger, maxAttempts: config.memory.summarizerMaxAttempts });
    await queue.start();
  }
  return {
    store,
    queue,
    timeZone,
    workspace,
    memoryContext: () =>
      buildMemoryContext({
        store,
        timeZone,
        now: Date.now(),
        budgetTokens: config.memory.contextTokens,
        tokenCounter,
      }),
    async enqueue(sessionKey, reason, messages, summary) {
      if (!queue || messages.length === 0) return;
      await queue.enqueue({
        sessionKey,
        reason,
        messages: [...messages],
        ...(summary === undefined ? {} : { summary }),
        createdAt: Date.now(),
      });
    },
    async stop(deadlineMs) {
      await queue?.stop({ deadlineMs });
    },
    async writeWorkspaceText(target, content) {
      if (isMemoryFilePath(target.shown)) {
        await store.write(target.shown, content);
        return;
      }
      await writeFileAtomic(target.absolute, content, { encoding: "utf8" });
    },
  };
}
