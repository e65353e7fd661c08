import type { Logger } from "@almanac/core";
import {
  createEmbeddingGate,
  createMemoryIndexer,
  createMemorySearch,
  createSqliteIndex,
  type MemoryIndexBackend,
  type MemoryIndexer,
  type MemorySearch,
  type SqliteIndexOptions,
  type SyncProgress,
} from "@almanac/memory-index";
import type { MemoryIndexChoice, MemoryOptions } from "./create-memory.js";

/** A damaged index file moved aside at start-up or later; `rebuiltAt` is set once the rebuild finished. */
type IndexRepairStatus = Parameters<NonNullable<SqliteIndexOptions["onRepair"]>>[0] & {
  readonly rebuiltAt?: number;
};

type SyncKind = "sync" | "reindex";

/** What the index needs of the memory's options; `logger` is the unbound one its parts bind their component to. */
type IndexServiceOptions = Pick<MemoryOptions, "workspace" | "index" | "embedder" | "logger">;

/**
 * The memory index with its search and indexer, and the syncs that keep it up to date: the start-up sync in
 * the background, a reindex on request, and a rebuild whenever a damaged index file was replaced.
 */
export class MemoryIndexService {
  readonly search: MemorySearch;
  readonly indexer: MemoryIndexer;
  readonly #backend: MemoryIndexBackend;
  readonly #logger: Logger;
  /** The watcher's start and the start-up sync; awaited on close only once indexing has begun. */
  #startup: Promise<void> = Promise.resolve();
  // A damaged index file is moved aside and replaced by an empty one (at open or when a query meets the
  // damage); until a sync over the Markdown has finished, the status says "rebuilding" and search says so.
  #indexRepair: IndexRepairStatus | undefined;
  #syncing: { kind: SyncKind; progress?: SyncProgress } | undefined = { kind: "sync" };
  #lastError: string | undefined;
  #stopping = false;
  #indexingBegun = false;

  /**
   * Opens the chosen backend with the search and the indexer over it; {@link MemoryIndexService.startIndexing} starts the syncs.
   * `logger` is the memory's own (component "memory"), for the syncs' outcome.
   */
  static async open(options: IndexServiceOptions, logger: Logger): Promise<MemoryIndexService> {
    // Damage met while the backend opens is only recorded: the start-up sync that follows rebuilds the index.
    let service: MemoryIndexService | undefined;
    let repairAtOpen: IndexRepairStatus | undefined;
    const backend = await openIndex(options.index, options.logger, (repair) => {
      if (service === undefined) repairAtOpen = repair;
      else service.#repaired(repair);
    });
    service = new MemoryIndexService(backend, repairAtOpen, options, logger);
    return service;
  }

  private constructor(
    backend: MemoryIndexBackend,
    repairAtOpen: IndexRepairStatus | undefined,
    options: IndexServiceOptions,
    logger: Logger,
  ) {
    const { workspace, logger: partLogger } = options;
    this.#backend = backend;
    this.#logger = logger;
    this.#indexRepair = repairAtOpen;
    const embeddings = createEmbeddingGate({
      ...(options.embedder === undefined ? {} : { embedder: options.embedder }),
      logger: partLogger,
    });
    this.search = createMemorySearch({
      backend,
      embedder: embeddings,
      logger: partLogger,
      indexNote: () =>
        this.#rebuilding()
          ? "The memory index is being rebuilt from the Markdown files (the old one was damaged); results may be incomplete until it is done."
          : undefined,
    });
    this.indexer = createMemoryIndexer({ workspace, backend, embedder: embeddings, logger: partLogger });
  }

  /**
   * Starts the watcher, then the start-up sync, once `after` resolves (see `MemoryOptions.startIndexing`).
   * The memory's factory calls it right after opening the index: the rest of its opening never waits for indexing.
   */
  startIndexing(after: Promise<void> = Promise.resolve()): void {
    // The start-up sync runs in the background (large workspaces take a while); the watcher starts first so
    // no edit made meanwhile is missed. Stopped before it began (a server that failed to start), it never does.
    this.#startup = after.then(() => {
      if (this.#stopping) return;
      this.#indexingBegun = true;
      return this.indexer
        .watch()
        .then(() => this.#track("sync", (onProgress) => this.indexer.sync({ onProgress })));
    });
  }

  /** The index's state for the admin API: counts, last sync, embedding mode, a running sync's progress. */
  async status(): Promise<Record<string, unknown>> {
    const status = await this.indexer.status();
    const syncing = this.#syncing;
    return {
      state: this.#rebuilding()
        ? "rebuilding"
        : syncing
          ? syncing.kind === "reindex"
            ? "reindexing"
            : "syncing"
          : "idle",
      ...(this.#indexRepair ? { repair: this.#indexRepair } : {}),
      ...(syncing?.progress ? { progress: syncing.progress } : {}),
      ...(this.#lastError ? { lastError: this.#lastError } : {}),
      ...status,
    };
  }

  /** Starts a full rebuild in the background; false when a sync or reindex is already running. */
  startReindex(): boolean {
    if (this.#syncing) return false;
    void this.#track("reindex", (onProgress) => this.indexer.reindex({ onProgress }));
    return true;
  }

  /** From here on the start-up indexing never begins (it may have already). */
  beginStop(): void {
    this.#stopping = true;
  }

  /** Waits for the start-up sync and closes the indexer, each within the deadline, then closes the backend. */
  async close(deadlineMs: number): Promise<void> {
    // A start-up sync of a large workspace may still run: give it the deadline, not forever (the index
    // is rebuildable, and the next start resumes the incremental sync).
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, deadlineMs);
      timer.unref();
    });
    if (this.#indexingBegun) await Promise.race([this.#startup.catch(() => {}), deadline]);
    clearTimeout(timer);
    await Promise.race([this.indexer.close(), deadline]);
    try {
      await this.#backend.close();
    } catch (error) {
      this.#logger.warn(
        { err: error },
        "memory index closed while a sync was still running; the next start resumes it",
      );
    }
  }

  #rebuilding(): boolean {
    return this.#indexRepair !== undefined && this.#indexRepair.rebuiltAt === undefined;
  }

  /** The backend's `onRepair` once the service exists: the fresh index is empty, so it is synced again. */
  #repaired(repair: IndexRepairStatus): void {
    this.#indexRepair = repair;
    this.#rebuildAfterRepair();
  }

  #rebuildAfterRepair(): void {
    if (this.#syncing === undefined)
      void this.#track("sync", (onProgress) => this.indexer.sync({ onProgress }));
  }

  #track(kind: SyncKind, run: (onProgress: (progress: SyncProgress) => void) => Promise<unknown>) {
    this.#syncing = { kind };
    const repairAtStart = this.#indexRepair;
    return run((progress) => {
      this.#syncing = { kind, progress };
    })
      .then(() => {
        this.#lastError = undefined;
        if (this.#indexRepair !== undefined && this.#indexRepair === repairAtStart && this.#rebuilding()) {
          this.#indexRepair = { ...this.#indexRepair, rebuiltAt: Date.now() };
          this.#logger.info(
            { movedTo: this.#indexRepair.movedTo },
            "memory index rebuilt from the Markdown files",
          );
        }
      })
      .catch((error: unknown) => {
        this.#lastError = error instanceof Error ? error.message : String(error);
        this.#logger.error({ err: error }, `memory index ${kind} failed`);
      })
      .finally(() => {
        this.#syncing = undefined;
        // Damage found while this sync ran: the fresh index lacks what was synced before it; sync again.
        if (this.#indexRepair !== repairAtStart && this.#rebuilding()) this.#rebuildAfterRepair();
      });
  }
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
