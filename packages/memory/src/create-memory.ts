import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { readTextFile, type Tool, type WorkspaceTarget } from "@almanac/agent";
import { type ChatModel, type Embedder, type Logger, type TokenCounter, UserError } from "@almanac/core";
import { writeFileDurably } from "@almanac/durable-write";
import {
  createMemoryFileStore,
  type ForgottenPhrase,
  ForgottenRegistry,
  isMemoryFilePath,
  type MemoryFileStore,
  type MemoryScope,
  normalizePhrase,
  withoutForgotten,
} from "@almanac/memory-files";
import { createMemoryTools, type MemoryIndexer, type MemorySearch } from "@almanac/memory-index";
import {
  createSummarizer,
  createSummaryQueue,
  type SummaryJobInput,
  type SummaryQueue,
} from "@almanac/summarizer";
import { MemoryContextCache } from "./memory-context-cache.js";
import { MemoryIndexService } from "./memory-index-service.js";

/** Where the index lives: the embedded SQLite file (repaired when damaged), or a Qdrant collection. */
export type MemoryIndexChoice =
  | { readonly backend: "sqlite"; readonly path: string; readonly dimensions?: number }
  | {
      readonly backend: "qdrant";
      readonly url: string;
      readonly apiKey?: string;
      readonly collection: string;
      readonly dimensions: number;
    };

export interface MemoryOptions {
  /** The owner's workspace: `MEMORY.md`, `memory/**.md` and the shared chats' folders live here. */
  readonly workspace: string;
  /** Private state: backups, the summarizer's journal, the SQLite index when it is the default path. */
  readonly stateDir: string;
  /** The zone whose local day names a daily log. */
  readonly timeZone: string;
  readonly index: MemoryIndexChoice;
  /** Absent: search is full-text only. Wrapped in a circuit breaker shared by the indexer and the search. */
  readonly embedder?: Embedder;
  /** Absent when no model is configured: nothing to summarize with, `enqueue` is a no-op. */
  readonly summarizer?: {
    readonly model: ChatModel;
    /** Every summarizer request is sized from the model's window, the output cap kept free. */
    readonly contextWindow: number;
    readonly maxOutputTokens: number;
    readonly maxAttempts: number;
  };
  /** The token budget of the memory excerpt in a session's system prompt. */
  readonly contextTokens: number;
  /** The largest `memory_search`/`memory_get` result, so it reaches the model whole. */
  readonly toolOutputTokens: number;
  /** Whose memory a session reaches: the one place it is decided (the server's configuration). */
  readonly scopeOf: (sessionKey: string) => MemoryScope;
  readonly tokenCounter: TokenCounter;
  readonly logger: Logger;
  /**
   * The start-up watch and sync of the index begin once this resolves (default: at once). A server passes
   * "serving": the watcher's first walk of the workspace then does not delay the first answer, and search
   * answers from the index as it was meanwhile (the status says "syncing"). No edit is missed: the sync
   * that follows the watcher's start compares every file with the index.
   */
  readonly startIndexing?: Promise<void>;
}

/** How long the backups that still hold a forgotten line are kept (to undo a mistaken forget by hand). */
export const FORGET_BACKUP_DAYS = 7;

/** What a forget removed. */
export interface ForgetReport {
  readonly phrase: string;
  readonly files: readonly { readonly path: string; readonly removed: readonly string[] }[];
  /** Backups with the removed lines are deleted after this time (ms since the epoch). */
  readonly backupsKeptUntil: number;
}

/** Long-term memory as one object: the Markdown files, the index and search, the summarizer queue. */
export interface Memory {
  readonly store: MemoryFileStore;
  /** Absent when no model is configured (nothing to summarize with). */
  readonly queue: SummaryQueue | undefined;
  readonly timeZone: string;
  readonly workspace: string;
  readonly search: MemorySearch;
  readonly indexer: MemoryIndexer;
  /** Whose memory a session reaches (see `MemoryOptions.scopeOf`). */
  scopeOf(sessionKey: string): MemoryScope;
  /** `memory_search` and `memory_get` for the chat agent, confined to a scope. */
  toolsFor(scope: MemoryScope): Tool[];
  /** The index's state for the admin API: counts, last sync, embedding mode, a running sync's progress. */
  indexStatus(): Promise<Record<string, unknown>>;
  /** Starts a full rebuild in the background; false when one is already running. */
  startReindex(): boolean;
  /**
   * The bounded excerpt for a session's system prompt: MEMORY.md and the recent daily logs for the owner,
   * only the chat's own recent logs for a shared scope. `budgetTokens` lowers the configured budget (never
   * raises it) when the model's window has less room; the excerpt then says it was limited.
   */
  memoryContext(scope: MemoryScope, budgetTokens?: number): Promise<string>;
  /**
   * Forgets a fact: every line of MEMORY.md and the daily logs that mentions `phrase` is removed (the previous
   * versions kept as backups for {@link FORGET_BACKUP_DAYS} days), the index updated at once, and the phrase
   * recorded so the summarizer never writes it back. Only the owner's files: a shared chat cannot call it.
   */
  forget(phrase: string, by: string): Promise<ForgetReport>;
  /** What was asked to be forgotten, oldest first. */
  forgotten(): readonly ForgottenPhrase[];
  /** Journals a conversation's messages for the daily logs (no-op without a model or without messages). */
  enqueue(job: SummaryJobInput): Promise<void>;
  /** Stops the queue, the watcher and the index, each within the deadline (milliseconds). */
  stop(deadlineMs: number): Promise<void>;
  /**
   * How the chat agent's file tools write: memory files (`MEMORY.md`, `memory/**.md`) go through the
   * write-safe store (backup, shrink guard), everything else is written atomically.
   */
  writeWorkspaceText(
    target: { readonly absolute: string; readonly shown: string },
    content: string,
    seen?: Map<string, string>,
  ): Promise<void>;
  /**
   * How the chat agent's file tools read: memory files through the store, remembering the version read in
   * `seen` (one map per turn), so a later write can tell whether a person changed the file meanwhile.
   */
  readWorkspaceText(target: WorkspaceTarget, seen?: Map<string, string>): Promise<string>;
}

/**
 * Opens the memory: the file store, the index with its watcher (the start-up sync runs in the background),
 * and, when a summarizer model is given, the summarizer queue (started: journaled jobs resume).
 */
export async function createMemory(options: MemoryOptions): Promise<Memory> {
  // Its own lines say component "memory"; each part it creates binds its own component (pino would repeat the
  // key if a part's binding were added to this one), so the parts get the unbound logger.
  const logger = options.logger.child({ component: "memory" });
  const { workspace, stateDir } = options;
  const store = createMemoryFileStore({ workspace, stateDir, logger: options.logger });
  const index = await MemoryIndexService.open(options, logger);
  index.startIndexing(options.startIndexing);
  const forgotten = new ForgottenRegistry(join(stateDir, "forgotten.json"));
  await forgotten.open();
  const queue =
    options.summarizer === undefined
      ? undefined
      : await startSummaryQueue(options, options.summarizer, store, forgotten);
  const memory = new LongTermMemory(options, logger, { store, index, forgotten, queue });
  await memory.startPurging();
  return memory;
}

/** The summarizer and its queue, started: jobs journaled before a stop or crash resume. */
async function startSummaryQueue(
  options: MemoryOptions,
  summarizer: NonNullable<MemoryOptions["summarizer"]>,
  store: MemoryFileStore,
  forgotten: ForgottenRegistry,
): Promise<SummaryQueue> {
  const { workspace, stateDir, timeZone, tokenCounter } = options;
  const { model, contextWindow, maxOutputTokens, maxAttempts } = summarizer;
  const run = createSummarizer({
    model,
    workspace,
    stateDir,
    store,
    timeZone,
    tokenCounter,
    contextWindow,
    maxOutputTokens,
    logger: options.logger,
    scopeOf: options.scopeOf,
    forgotten: () => forgotten.normalized(),
  });
  const queue = createSummaryQueue({ stateDir, run, logger: options.logger, maxAttempts });
  await queue.start();
  return queue;
}

/** What {@link createMemory} opened before the memory object is built. */
interface OpenedParts {
  readonly store: MemoryFileStore;
  readonly index: MemoryIndexService;
  readonly forgotten: ForgottenRegistry;
  readonly queue: SummaryQueue | undefined;
}

/** {@link Memory} over its opened parts: the index service, the context cache and the forgotten registry. */
class LongTermMemory implements Memory {
  readonly store: MemoryFileStore;
  readonly queue: SummaryQueue | undefined;
  readonly timeZone: string;
  readonly workspace: string;
  readonly search: MemorySearch;
  readonly indexer: MemoryIndexer;
  /** The configured function itself, not a method: callers may pass it on as it is. */
  readonly scopeOf: (sessionKey: string) => MemoryScope;
  readonly #options: MemoryOptions;
  readonly #logger: Logger;
  readonly #index: MemoryIndexService;
  readonly #forgotten: ForgottenRegistry;
  readonly #contexts: MemoryContextCache;
  #purgeTimer: NodeJS.Timeout | undefined;

  constructor(options: MemoryOptions, logger: Logger, parts: OpenedParts) {
    this.#options = options;
    this.#logger = logger;
    this.store = parts.store;
    this.queue = parts.queue;
    this.timeZone = options.timeZone;
    this.workspace = options.workspace;
    this.#index = parts.index;
    this.search = parts.index.search;
    this.indexer = parts.index.indexer;
    this.scopeOf = options.scopeOf;
    this.#forgotten = parts.forgotten;
    this.#contexts = new MemoryContextCache({
      workspace: options.workspace,
      store: parts.store,
      timeZone: options.timeZone,
      contextTokens: options.contextTokens,
      tokenCounter: options.tokenCounter,
    });
  }

  /** Scrubs the backups whose time is up now, then once a day; a failed scrub is logged and retried the next day. */
  async startPurging(): Promise<void> {
    await this.#purgeForgottenBackups().catch((error: unknown) =>
      this.#logger.warn({ err: error }, "could not scrub forgotten lines from backups; will retry"),
    );
    this.#purgeTimer = setInterval(() => {
      this.#purgeForgottenBackups().catch((error: unknown) =>
        this.#logger.warn({ err: error }, "could not scrub forgotten lines from backups; will retry"),
      );
    }, 86_400_000);
    this.#purgeTimer.unref();
  }

  toolsFor(scope: MemoryScope): Tool[] {
    const { tokenCounter } = this.#options;
    return createMemoryTools({
      search: this.search,
      workspace: this.workspace,
      scope,
      maxOutputTokens: this.#options.toolOutputTokens,
      countTokens: (text) => tokenCounter.countText(text),
    });
  }

  indexStatus(): Promise<Record<string, unknown>> {
    return this.#index.status();
  }

  startReindex(): boolean {
    return this.#index.startReindex();
  }

  memoryContext(scope: MemoryScope, budgetTokens?: number): Promise<string> {
    return this.#contexts.get(scope, budgetTokens);
  }

  async forget(phrase: string, by: string): Promise<ForgetReport> {
    const normalized = normalizePhrase(phrase);
    if (normalized.length < 3)
      throw new UserError("memory.forget_too_short", "Say what to forget in at least three characters.");
    const now = Date.now();
    // Recorded first: from here on no summarizer commit writes the phrase back, whatever happens below.
    await this.#forgotten.add({ phrase, at: now, by, purgeBackupsAt: now + FORGET_BACKUP_DAYS * 86_400_000 });
    const files: Array<{ readonly path: string; readonly removed: readonly string[] }> = [];
    for (const file of await this.store.list()) {
      const current = await this.store.tryRead(file.path);
      if (current === undefined) continue;
      const { content, removed } = withoutForgotten(current.content, [normalized]);
      if (removed.length === 0) continue;
      await this.store.write(file.path, content, { expectedHash: current.hash, allowShrink: true });
      files.push({ path: file.path, removed });
    }
    // The index forgets at once, not after the watcher's debounce.
    if (files.length > 0) await this.indexer.sync();
    this.#logger.info(
      { files: files.length, lines: files.reduce((sum, file) => sum + file.removed.length, 0) },
      "forgot",
    );
    return { phrase, files, backupsKeptUntil: now + FORGET_BACKUP_DAYS * 86_400_000 };
  }

  forgotten(): readonly ForgottenPhrase[] {
    return this.#forgotten.list();
  }

  async enqueue(job: SummaryJobInput): Promise<void> {
    if (!this.queue || job.messages.length === 0) return;
    await this.queue.enqueue(job);
  }

  async stop(deadlineMs: number): Promise<void> {
    clearInterval(this.#purgeTimer);
    this.#index.beginStop();
    await this.queue?.stop({ deadlineMs });
    await this.#index.close(deadlineMs);
  }

  async readWorkspaceText(target: WorkspaceTarget, seen?: Map<string, string>): Promise<string> {
    if (!isMemoryFilePath(target.shown)) return readTextFile(target);
    const file = await this.store.read(target.shown);
    seen?.set(target.shown, file.hash);
    return file.content;
  }

  async writeWorkspaceText(
    target: { readonly absolute: string; readonly shown: string },
    content: string,
    seen?: Map<string, string>,
  ): Promise<void> {
    if (isMemoryFilePath(target.shown)) {
      // A version read in this turn must still be the current one: otherwise someone edited the file
      // meanwhile, and the store refuses with memory.conflict (the model re-reads and redoes its change).
      const expectedHash = seen?.get(target.shown);
      const written = await this.store.write(
        target.shown,
        content,
        expectedHash === undefined ? {} : { expectedHash },
      );
      seen?.set(target.shown, written.hash);
      return;
    }
    await writeFileDurably(target.absolute, content);
  }

  /**
   * Backups still holding lines of a forgotten phrase are scrubbed once its time is up (they are kept until then,
   * so a mistaken forget can be undone by hand). Runs at start, after each forget and once a day.
   */
  async #purgeForgottenBackups(): Promise<void> {
    const now = Date.now();
    const due = this.#forgotten
      .list()
      .filter((entry) => entry.purgedAt === undefined && entry.purgeBackupsAt <= now);
    if (due.length === 0) return;
    const phrases = due.map((entry) => normalizePhrase(entry.phrase));
    let scrubbed = 0;
    for (const file of await listFilesUnder(join(this.#options.stateDir, "backups"))) {
      const text = await readFile(file, "utf8");
      const { content, removed } = withoutForgotten(text, phrases);
      if (removed.length === 0) continue;
      await writeFileDurably(file, content);
      scrubbed += 1;
    }
    for (const entry of due) await this.#forgotten.markPurged(entry.phrase, now);
    this.#logger.info({ phrases: due.length, backups: scrubbed }, "scrubbed forgotten lines from backups");
  }
}

/** Every file under `directory` (none when it does not exist). */
async function listFilesUnder(directory: string): Promise<string[]> {
  try {
    const entries = await readdir(directory, { recursive: true, withFileTypes: true });
    return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
