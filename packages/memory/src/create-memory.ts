import { lstatSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { readTextFile, type Tool, type WorkspaceTarget } from "@almanac/agent";
import {
  type ChatModel,
  type Embedder,
  groupCalls,
  type Logger,
  type TokenCounter,
  UserError,
  writeFileDurably,
} from "@almanac/core";
import {
  buildMemoryContext,
  createMemoryFileStore,
  type ForgottenPhrase,
  ForgottenRegistry,
  isMemoryFilePath,
  type MemoryFileStore,
  type MemoryScope,
  memoryContextFiles,
  normalizePhrase,
  withoutForgotten,
} from "@almanac/memory-files";
import {
  createEmbeddingGate,
  createMemoryIndexer,
  createMemorySearch,
  createMemoryTools,
  createSqliteIndex,
  type MemoryIndexBackend,
  type MemoryIndexer,
  type MemorySearch,
  type SqliteIndexOptions,
  type SyncProgress,
} from "@almanac/memory-index";
import {
  createSummarizer,
  createSummaryQueue,
  type SummaryJobInput,
  type SummaryQueue,
} from "@almanac/summarizer";

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

/** A damaged index file moved aside at start-up or later; `rebuiltAt` is set once the rebuild finished. */
type IndexRepairStatus = Parameters<NonNullable<SqliteIndexOptions["onRepair"]>>[0] & {
  readonly rebuiltAt?: number;
};

/**
 * Opens the memory: the file store, the index with its watcher (the start-up sync runs in the background),
 * and, when a summarizer model is given, the summarizer queue (started: journaled jobs resume).
 */
export async function createMemory(options: MemoryOptions): Promise<Memory> {
  const { workspace, stateDir, timeZone, tokenCounter } = options;
  // Its own lines say component "memory"; each part it creates binds its own component (pino would repeat the
  // key if a part's binding were added to this one), so the parts get the unbound logger.
  const logger = options.logger.child({ component: "memory" });
  const partLogger = options.logger;
  const store = createMemoryFileStore({ workspace, stateDir, logger: partLogger });
  // A damaged index file is moved aside and replaced by an empty one (at open or when a query meets the
  // damage); until a sync over the Markdown has finished, the status says "rebuilding" and search says so.
  let indexRepair: IndexRepairStatus | undefined;
  let rebuildAfterRepair: (() => void) | undefined;
  const backend = await openIndex(options.index, partLogger, (repair) => {
    indexRepair = repair;
    rebuildAfterRepair?.();
  });
  const rebuilding = (): boolean => indexRepair !== undefined && indexRepair.rebuiltAt === undefined;
  const embeddings = createEmbeddingGate({
    ...(options.embedder === undefined ? {} : { embedder: options.embedder }),
    logger: partLogger,
  });
  const search = createMemorySearch({
    backend,
    embedder: embeddings,
    logger: partLogger,
    indexNote: () =>
      rebuilding()
        ? "The memory index is being rebuilt from the Markdown files (the old one was damaged); results may be incomplete until it is done."
        : undefined,
  });
  const indexer = createMemoryIndexer({ workspace, backend, embedder: embeddings, logger: partLogger });
  let syncing: { kind: "sync" | "reindex"; progress?: SyncProgress } | undefined = { kind: "sync" };
  let lastError: string | undefined;
  const track = (
    kind: "sync" | "reindex",
    run: (onProgress: (progress: SyncProgress) => void) => Promise<unknown>,
  ) => {
    syncing = { kind };
    const repairAtStart = indexRepair;
    return run((progress) => {
      syncing = { kind, progress };
    })
      .then(() => {
        lastError = undefined;
        if (indexRepair !== undefined && indexRepair === repairAtStart && rebuilding()) {
          indexRepair = { ...indexRepair, rebuiltAt: Date.now() };
          logger.info({ movedTo: indexRepair.movedTo }, "memory index rebuilt from the Markdown files");
        }
      })
      .catch((error: unknown) => {
        lastError = error instanceof Error ? error.message : String(error);
        logger.error({ err: error }, `memory index ${kind} failed`);
      })
      .finally(() => {
        syncing = undefined;
        // Damage found while this sync ran: the fresh index lacks what was synced before it; sync again.
        if (indexRepair !== repairAtStart && rebuilding()) rebuildAfterRepair?.();
      });
  };
  rebuildAfterRepair = () => {
    if (syncing === undefined) void track("sync", (onProgress) => indexer.sync({ onProgress }));
  };
  // The start-up sync runs in the background (large workspaces take a while); the watcher starts first so
  // no edit made meanwhile is missed. Stopped before it began (a server that failed to start), it never does.
  let stopping = false;
  let indexingBegun = false;
  const startup = (options.startIndexing ?? Promise.resolve()).then(() => {
    if (stopping) return;
    indexingBegun = true;
    return indexer.watch().then(() => track("sync", (onProgress) => indexer.sync({ onProgress })));
  });
  const forgotten = new ForgottenRegistry(join(stateDir, "forgotten.json"));
  await forgotten.open();
  let queue: SummaryQueue | undefined;
  if (options.summarizer) {
    const { model, contextWindow, maxOutputTokens, maxAttempts } = options.summarizer;
    const run = createSummarizer({
      model,
      workspace,
      stateDir,
      store,
      timeZone,
      tokenCounter,
      contextWindow,
      maxOutputTokens,
      logger: partLogger,
      scopeOf: options.scopeOf,
      forgotten: () => forgotten.normalized(),
    });
    queue = createSummaryQueue({ stateDir, run, logger: partLogger, maxAttempts });
    await queue.start();
  }
  /**
   * The last memory context built per scope, with what its files were (inode, size, change times): a new
   * session gets it again while none of them changed, instead of reading and counting the files anew (path
   * checks, reads and token counts were ~13 % of the server's main thread while 100 sessions started at once).
   * A write through the store replaces the file (a new inode); an edit in place changes its times.
   *
   * The checks of one scope run in groups (core's `groupCalls`): sessions starting while a check (and the
   * rebuild it may start) runs share the one after it, which still sees every change made before they asked.
   * The stat calls are blocking (see `fileStamp`).
   */
  const KEPT_CONTEXTS = 256; // scopes: the owner and each shared chat
  const contexts = new Map<string, { readonly stamps: string; readonly text: string }>();
  const checkMemoryContext = groupCalls(async (key: string): Promise<string> => {
    const { scope, budget } = JSON.parse(key) as { scope: MemoryScope; budget: number };
    const now = Date.now();
    const files = memoryContextFiles(scope, now, timeZone);
    const stamps = files.map((file) => fileStamp(workspace, file)).join("|");
    const known = contexts.get(key);
    if (known !== undefined && known.stamps === stamps) return known.text;
    const text = await buildMemoryContext({
      scope,
      store,
      timeZone,
      now,
      budgetTokens: budget,
      configuredTokens: options.contextTokens,
      tokenCounter,
    });
    contexts.delete(key);
    if (contexts.size >= KEPT_CONTEXTS) contexts.delete(contexts.keys().next().value ?? "");
    contexts.set(key, { stamps, text });
    return text;
  });
  const memoryContext = (scope: MemoryScope, budgetTokens?: number): Promise<string> => {
    const budget = Math.max(
      0,
      Math.min(options.contextTokens, Math.floor(budgetTokens ?? Number.POSITIVE_INFINITY)),
    );
    return checkMemoryContext(JSON.stringify({ scope, budget }));
  };
  /**
   * Backups still holding lines of a forgotten phrase are scrubbed once its time is up (they are kept until then,
   * so a mistaken forget can be undone by hand). Runs at start, after each forget and once a day.
   */
  const purgeForgottenBackups = async (): Promise<void> => {
    const now = Date.now();
    const due = forgotten
      .list()
      .filter((entry) => entry.purgedAt === undefined && entry.purgeBackupsAt <= now);
    if (due.length === 0) return;
    const phrases = due.map((entry) => normalizePhrase(entry.phrase));
    let scrubbed = 0;
    for (const file of await listFilesUnder(join(stateDir, "backups"))) {
      const text = await readFile(file, "utf8");
      const { content, removed } = withoutForgotten(text, phrases);
      if (removed.length === 0) continue;
      await writeFileDurably(file, content);
      scrubbed += 1;
    }
    for (const entry of due) await forgotten.markPurged(entry.phrase, now);
    logger.info({ phrases: due.length, backups: scrubbed }, "scrubbed forgotten lines from backups");
  };
  await purgeForgottenBackups().catch((error: unknown) =>
    logger.warn({ err: error }, "could not scrub forgotten lines from backups; will retry"),
  );
  const purgeTimer = setInterval(() => {
    purgeForgottenBackups().catch((error: unknown) =>
      logger.warn({ err: error }, "could not scrub forgotten lines from backups; will retry"),
    );
  }, 86_400_000);
  purgeTimer.unref();
  const forget = async (phrase: string, by: string): Promise<ForgetReport> => {
    const normalized = normalizePhrase(phrase);
    if (normalized.length < 3)
      throw new UserError("memory.forget_too_short", "Say what to forget in at least three characters.");
    const now = Date.now();
    // Recorded first: from here on no summarizer commit writes the phrase back, whatever happens below.
    await forgotten.add({ phrase, at: now, by, purgeBackupsAt: now + FORGET_BACKUP_DAYS * 86_400_000 });
    const files: Array<{ readonly path: string; readonly removed: readonly string[] }> = [];
    for (const file of await store.list()) {
      const current = await store.tryRead(file.path);
      if (current === undefined) continue;
      const { content, removed } = withoutForgotten(current.content, [normalized]);
      if (removed.length === 0) continue;
      await store.write(file.path, content, { expectedHash: current.hash, allowShrink: true });
      files.push({ path: file.path, removed });
    }
    // The index forgets at once, not after the watcher's debounce.
    if (files.length > 0) await indexer.sync();
    logger.info(
      { files: files.length, lines: files.reduce((sum, file) => sum + file.removed.length, 0) },
      "forgot",
    );
    return { phrase, files, backupsKeptUntil: now + FORGET_BACKUP_DAYS * 86_400_000 };
  };
  return {
    store,
    queue,
    timeZone,
    forget,
    forgotten: () => forgotten.list(),
    workspace,
    search,
    indexer,
    scopeOf: options.scopeOf,
    toolsFor: (scope) =>
      createMemoryTools({
        search,
        workspace,
        scope,
        maxOutputTokens: options.toolOutputTokens,
        countTokens: (text) => tokenCounter.countText(text),
      }),
    async indexStatus() {
      const status = await indexer.status();
      return {
        state: rebuilding()
          ? "rebuilding"
          : syncing
            ? syncing.kind === "reindex"
              ? "reindexing"
              : "syncing"
            : "idle",
        ...(indexRepair ? { repair: indexRepair } : {}),
        ...(syncing?.progress ? { progress: syncing.progress } : {}),
        ...(lastError ? { lastError } : {}),
        ...status,
      };
    },
    startReindex() {
      if (syncing) return false;
      void track("reindex", (onProgress) => indexer.reindex({ onProgress }));
      return true;
    },
    memoryContext,
    async enqueue(job) {
      if (!queue || job.messages.length === 0) return;
      await queue.enqueue(job);
    },
    async stop(deadlineMs) {
      clearInterval(purgeTimer);
      stopping = true;
      await queue?.stop({ deadlineMs });
      // A start-up sync of a large workspace may still run: give it the deadline, not forever (the index
      // is rebuildable, and the next start resumes the incremental sync).
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, deadlineMs);
        timer.unref();
      });
      if (indexingBegun) await Promise.race([startup.catch(() => {}), deadline]);
      clearTimeout(timer);
      await Promise.race([indexer.close(), deadline]);
      try {
        await backend.close();
      } catch (error) {
        logger.warn(
          { err: error },
          "memory index closed while a sync was still running; the next start resumes it",
        );
      }
    },
    async readWorkspaceText(target, seen) {
      if (!isMemoryFilePath(target.shown)) return readTextFile(target);
      const file = await store.read(target.shown);
      seen?.set(target.shown, file.hash);
      return file.content;
    },
    async writeWorkspaceText(target, content, seen) {
      if (isMemoryFilePath(target.shown)) {
        // A version read in this turn must still be the current one: otherwise someone edited the file
        // meanwhile, and the store refuses with memory.conflict (the model re-reads and redoes its change).
        const expectedHash = seen?.get(target.shown);
        const written = await store.write(
          target.shown,
          content,
          expectedHash === undefined ? {} : { expectedHash },
        );
        seen?.set(target.shown, written.hash);
        return;
      }
      await writeFileDurably(target.absolute, content);
    },
  };
}

/** Opens the chosen backend. The Qdrant client (with its HTTP stack, ~20 MB resident, ~45 ms to load) only when chosen. */
async function openIndex(
  choice: MemoryIndexChoice,
  logger: Logger,
  onRepair: NonNullable<SqliteIndexOptions["onRepair"]>,
): Promise<MemoryIndexBackend> {
  if (choice.backend === "qdrant") {
    const { createQdrantIndex } = await import("@almanac/memory-index/qdrant");
    return createQdrantIndex({
      url: choice.url,
      ...(choice.apiKey ? { apiKey: choice.apiKey } : {}),
      collection: choice.collection,
      dimensions: choice.dimensions,
      logger,
    });
  }
  return createSqliteIndex({
    path: choice.path,
    ...(choice.dimensions === undefined ? {} : { dimensions: choice.dimensions }),
    onRepair,
    logger,
  });
}

/**
 * What a memory file is right now (inode, size, change times; `-` when it is missing or cannot be read), asked
 * blocking: a cached lstat needs no trip through libuv's pool, where it would queue behind the sessions' fsyncs
 * before each new session's first model call.
 */
function fileStamp(workspace: string, file: string): string {
  try {
    const stats = lstatSync(join(workspace, file), { bigint: true, throwIfNoEntry: false });
    if (stats !== undefined) return `${file}:${stats.ino}:${stats.size}:${stats.ctimeNs}:${stats.mtimeNs}`;
  } catch {
    // Unreadable counts as missing, as when the file is gone: the context is then rebuilt from what is there.
  }
  return `${file}:-`;
}
