import { join } from "node:path";
import { readTextFile, type Tool, type WorkspaceTarget } from "@almanac/agent";
import { toolOutputTokenBudget } from "@almanac/compaction";
import {
  type ChatModel,
  type Logger,
  type Message,
  type TokenCounter,
  UserError,
  writeFileDurably,
} from "@almanac/core";
import { createOpenAIEmbedder } from "@almanac/llm";
import {
  buildMemoryContext,
  createMemoryFileStore,
  isMemoryFilePath,
  type MemoryFileStore,
  type MemoryScope,
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
import { createSummarizer, createSummaryQueue, type SummaryQueue } from "@almanac/summarizer";
import { compactionWindow } from "./config/compaction-window.js";
import type { AlmanacConfig } from "./config/config-schema.js";
import { resolveMemoryScope } from "./memory-scope.js";

/** Long-term memory as the server uses it: the Markdown files and the summarizer queue. */
export interface MemoryServices {
  readonly store: MemoryFileStore;
  /** Absent when no model is configured (nothing to summarize with). */
  readonly queue: SummaryQueue | undefined;
  readonly timeZone: string;
  readonly workspace: string;
  readonly search: MemorySearch;
  readonly indexer: MemoryIndexer;
  /** Whose memory a session reaches (see `resolveMemoryScope`, the one place it is decided). */
  scopeOf(sessionKey: string): MemoryScope;
  /** `memory_search` and `memory_get` for the chat agent, confined to a scope. */
  toolsFor(scope: MemoryScope): Tool[];
  /** The index's state for the admin API: counts, last sync, embedding mode, a running sync's progress. */
  indexStatus(): Promise<Record<string, unknown>>;
  /** Starts a full rebuild in the background; false when one is already running. */
  startReindex(): boolean;
  /**
   * The bounded excerpt for a session's system prompt: MEMORY.md and the recent daily logs for the owner,
   * only the chat's own recent logs for a shared scope.
   */
  memoryContext(scope: MemoryScope): Promise<string>;
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

/** Creates the memory file store and, when a model is available, starts the summarizer queue. */
export async function createMemoryServices(options: {
  readonly config: AlmanacConfig;
  readonly summarizerModel: ChatModel | undefined;
  readonly tokenCounter: TokenCounter;
  readonly logger: Logger;
}): Promise<MemoryServices> {
  const { config, tokenCounter } = options;
  // Its own lines say component "memory"; each part it creates binds its own component (pino would repeat the
  // key if a part's binding were added to this one), so the parts get the unbound logger.
  const logger = options.logger.child({ component: "memory" });
  const partLogger = options.logger;
  const workspace = join(config.home, "workspace");
  const stateDir = join(config.home, "state");
  const timeZone = config.memory.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
  const store = createMemoryFileStore({ workspace, stateDir, logger: partLogger });
  // A damaged index file is moved aside and replaced by an empty one (at open or when a query meets the
  // damage); until a sync over the Markdown has finished, the status says "rebuilding" and search says so.
  let indexRepair: IndexRepairStatus | undefined;
  let rebuildAfterRepair: (() => void) | undefined;
  const backend = await createIndexBackend(config, partLogger, (repair) => {
    indexRepair = repair;
    rebuildAfterRepair?.();
  });
  const rebuilding = (): boolean => indexRepair !== undefined && indexRepair.rebuiltAt === undefined;
  const { embedding } = config;
  const embeddings = createEmbeddingGate({
    ...(embedding.baseUrl && embedding.model
      ? {
          embedder: createOpenAIEmbedder({
            baseURL: embedding.baseUrl,
            apiKey: embedding.apiKey ?? "",
            model: embedding.model,
            ...(embedding.dimensions === undefined ? {} : { dimensions: embedding.dimensions }),
            logger: partLogger,
          }),
        }
      : {}),
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
  // no edit made meanwhile is missed.
  const startup = indexer.watch().then(() => track("sync", (onProgress) => indexer.sync({ onProgress })));
  let queue: SummaryQueue | undefined;
  if (options.summarizerModel) {
    const run = createSummarizer({
      model: options.summarizerModel,
      workspace,
      stateDir,
      store,
      timeZone,
      tokenCounter,
      // Every summarizer request is sized from the model's window, the output cap kept free.
      contextWindow: config.model.contextWindow,
      maxOutputTokens: config.model.maxOutputTokens,
      logger: partLogger,
      scopeOf: (sessionKey) => resolveMemoryScope(sessionKey, config),
    });
    queue = createSummaryQueue({
      stateDir,
      run,
      logger: partLogger,
      maxAttempts: config.memory.summarizerMaxAttempts,
    });
    await queue.start();
  }
  return {
    store,
    queue,
    timeZone,
    workspace,
    search,
    indexer,
    scopeOf: (sessionKey) => resolveMemoryScope(sessionKey, config),
    toolsFor: (scope) =>
      createMemoryTools({
        search,
        workspace,
        scope,
        // Sized so a search result reaches the model whole instead of being cut as a giant output.
        maxOutputTokens: toolOutputTokenBudget(compactionWindow(config)),
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
    memoryContext: (scope) =>
      buildMemoryContext({
        scope,
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
      // A start-up sync of a large workspace may still run: give it the deadline, not forever (the index
      // is rebuildable, and the next start resumes the incremental sync).
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, deadlineMs);
        timer.unref();
      });
      await Promise.race([startup.catch(() => {}), deadline]);
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

/** The configured index backend: the embedded SQLite file (repaired when damaged, see `onRepair`), or Qdrant. */
async function createIndexBackend(
  config: AlmanacConfig,
  logger: Logger,
  onRepair: NonNullable<SqliteIndexOptions["onRepair"]>,
): Promise<MemoryIndexBackend> {
  const { index, embedding } = config;
  if (index.backend === "qdrant" && (embedding.baseUrl === undefined || embedding.dimensions === undefined)) {
    // A first `docker compose up` without an embedding model must still start: Qdrant needs the vector
    // size up front, so until the embedding settings exist the embedded index does the job.
    logger.child({ component: "memory" }).warn(
      {
        missing: ["ALMANAC_EMBEDDING_BASE_URL", "ALMANAC_EMBEDDING_MODEL", "ALMANAC_EMBEDDING_DIMENSIONS"],
      },
      "ALMANAC_INDEX_BACKEND=qdrant needs an embedding model and its dimensions; using the embedded SQLite index until they are set",
    );
  } else if (index.backend === "qdrant") {
    if (!index.qdrantUrl) {
      throw new UserError(
        "config.invalid",
        "ALMANAC_INDEX_BACKEND=qdrant needs ALMANAC_QDRANT_URL (e.g. http://qdrant:6333).",
      );
    }
    // Loaded only when configured: the Qdrant client (with its HTTP stack) is ~20 MB resident and ~45 ms to load.
    const { createQdrantIndex } = await import("@almanac/memory-index/qdrant");
    return createQdrantIndex({
      url: index.qdrantUrl,
      ...(index.qdrantApiKey ? { apiKey: index.qdrantApiKey } : {}),
      collection: index.qdrantCollection,
      dimensions: embedding.dimensions as number,
      logger,
    });
  }
  return createSqliteIndex({
    path: join(config.home, "state", "index.sqlite"),
    ...(embedding.dimensions === undefined ? {} : { dimensions: embedding.dimensions }),
    onRepair,
    logger,
  });
}
