import { type Logger, silentLogger, UserError } from "@almanac/core";
import { matchesPathFilter } from "@almanac/memory-files";
import { QdrantClient } from "@qdrant/js-client-rest";
import { z } from "zod";
import { setUpCollection } from "./qdrant-collection.js";
import { toQdrantError } from "./qdrant-errors.js";
import {
  DENSE,
  denseOf,
  firstChunk,
  hasDense,
  modelSchema,
  pathIs,
  pointId,
  scopeFilter,
  TEXT,
  toChunk,
  toFile,
  toPoint,
  UPSERT_BATCH,
} from "./qdrant-payload.js";
import { querySparseVector } from "./sparse-vector.js";
import type {
  BackendHit,
  BackendQuery,
  BackendStats,
  ChunkEmbeddings,
  ChunkVector,
  FileUpsert,
  IndexChunk,
  IndexedFile,
  MemoryIndexBackend,
  StoredChunk,
  TermStatistics,
} from "./types.js";
import { cosineSimilarity } from "./vector-math.js";

/** Options of {@link createQdrantIndex}. */
export interface QdrantIndexOptions {
  readonly url: string;
  readonly apiKey?: string;
  /** One collection per workspace, created on first use. */
  readonly collection: string;
  /** Dense vector size; an existing collection of another size is refused (`index.dimensions_mismatch`). */
  readonly dimensions: number;
  /** Per-request timeout (default 10 000 ms). */
  readonly timeoutMs?: number;
  /** Typical chunk length in analysed terms, for BM25 length normalisation (default 300). */
  readonly averageTerms?: number;
  readonly logger?: Logger;
}

/**
 * The Qdrant backend: one collection with a named dense vector and a named sparse text vector
 * (BM25 weights from the shared text analysis, hashed term ids, `modifier: "idf"`), queried
 * together with RRF fusion. Point ids are UUIDv5 of the chunk id, so restarts never duplicate.
 * File state rides on each file's first chunk. Qdrant down → `ProviderError` `index.unavailable`.
 */
export function createQdrantIndex(options: QdrantIndexOptions): MemoryIndexBackend {
  return new QdrantMemoryIndex(options);
}

/** A point as {@link QdrantMemoryIndex} reads it back from a scroll. */
interface ScrolledPoint {
  readonly id: string | number;
  readonly payload: unknown;
  readonly vector: unknown;
}

/**
 * The {@link MemoryIndexBackend} {@link createQdrantIndex} makes. Named apart from the interface so the
 * interface stays the public type: callers depend on the shape, not on this class's client or set-up state.
 */
class QdrantMemoryIndex implements MemoryIndexBackend {
  readonly kind = "qdrant";
  readonly #url: string;
  readonly #collection: string;
  readonly #dimensions: number;
  readonly #logger: Logger;
  readonly #averageTerms: number;
  readonly #client: QdrantClient;
  /** The collection set-up under way or done; cleared when it fails, so the next call retries. */
  #ready: Promise<void> | undefined;

  constructor(options: QdrantIndexOptions) {
    this.#url = options.url;
    this.#collection = options.collection;
    this.#dimensions = options.dimensions;
    this.#logger = (options.logger ?? silentLogger).child({
      component: "memory-index",
      backend: "qdrant",
      collection: options.collection,
    });
    this.#averageTerms = options.averageTerms ?? 300;
    this.#client = new QdrantClient({
      url: options.url,
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
      timeout: options.timeoutMs ?? 10_000,
      checkCompatibility: false,
    });
  }

  async upsertFile(
    file: IndexedFile,
    chunks: readonly IndexChunk[],
    embeddings?: ChunkEmbeddings,
  ): Promise<void> {
    await this.#ensureReady();
    const collection = this.#collection;
    const dimensions = this.#dimensions;
    for (const vector of embeddings?.vectors ?? []) {
      if (vector !== undefined && vector.length !== dimensions) {
        throw new UserError(
          "index.dimensions_mismatch",
          `Qdrant collection "${collection}" takes ${dimensions}-dimensional vectors; got ${vector.length}.`,
        );
      }
    }
    const points = chunks.map((chunk, index) =>
      toPoint(file, chunk, index, embeddings?.vectors[index], embeddings?.model, this.#averageTerms),
    );
    await this.#call("upsert", async () => {
      // New points first, then the file's other points: readers never see the file missing.
      for (let start = 0; start < points.length; start += UPSERT_BATCH) {
        await this.#client.upsert(collection, {
          wait: true,
          points: points.slice(start, start + UPSERT_BATCH),
        });
      }
      await this.#client.delete(collection, {
        wait: true,
        filter: { must: [pathIs(file.path)], must_not: [{ has_id: points.map((point) => point.id) }] },
      });
    });
  }

  async upsertFiles(files: readonly FileUpsert[]): Promise<void> {
    // One file at a time: Qdrant has no transaction across files, and each file's upsert keeps it whole.
    for (const { file, chunks, embeddings } of files) await this.upsertFile(file, chunks, embeddings);
  }

  async deleteFile(path: string): Promise<void> {
    await this.#ensureReady();
    await this.#call("delete", () =>
      this.#client.delete(this.#collection, { wait: true, filter: { must: [pathIs(path)] } }),
    );
  }

  async fileState(path: string): Promise<IndexedFile | undefined> {
    await this.#ensureReady();
    const page = await this.#call("file state", () =>
      this.#client.scroll(this.#collection, {
        filter: { must: [pathIs(path), firstChunk] },
        limit: 1,
        with_payload: true,
      }),
    );
    const point = page.points[0];
    return point === undefined ? undefined : toFile(point.payload);
  }

  async listFiles(): Promise<readonly IndexedFile[]> {
    await this.#ensureReady();
    const points = await this.#call("list files", () => this.#scrollAll({ must: [firstChunk] }, false));
    return points.map((point) => toFile(point.payload)).sort((a, b) => a.path.localeCompare(b.path));
  }

  async search(query: BackendQuery): Promise<BackendHit[]> {
    await this.#ensureReady();
    const collection = this.#collection;
    const sparse = querySparseVector(query.terms);
    const vector = query.vector;
    if (vector !== undefined && vector.length !== this.#dimensions) {
      throw new UserError(
        "index.dimensions_mismatch",
        `Query vector has ${vector.length} dimensions; the collection ${this.#dimensions}.`,
      );
    }
    const filter = query.paths === undefined ? {} : { filter: scopeFilter(query.paths) };
    // Points are filtered by scope in Qdrant (before the limit) and checked again here.
    const inScope = (chunk: StoredChunk) =>
      query.paths === undefined || matchesPathFilter(query.paths, chunk.path);
    if (vector === undefined) {
      if (sparse.indices.length === 0) return [];
      const response = await this.#call("search", () =>
        this.#client.query(collection, {
          query: sparse,
          using: TEXT,
          limit: query.limit,
          with_payload: true,
          ...filter,
        }),
      );
      return response.points
        .map((point) => ({ chunk: toChunk(point.payload), textScore: point.score }))
        .filter((hit) => inScope(hit.chunk));
    }
    const prefetch = [
      { query: [...vector], using: DENSE, limit: query.limit, ...filter },
      ...(sparse.indices.length > 0 ? [{ query: sparse, using: TEXT, limit: query.limit, ...filter }] : []),
    ];
    const response = await this.#call("search", () =>
      this.#client.query(collection, {
        prefetch,
        query: { fusion: "rrf" },
        limit: query.limit * 2,
        with_payload: true,
        with_vector: [DENSE],
      }),
    );
    return response.points.flatMap((point) => {
      const dense = denseOf(point.vector);
      const chunk = toChunk(point.payload);
      if (!inScope(chunk)) return [];
      return [dense === undefined ? { chunk } : { chunk, vectorSimilarity: cosineSimilarity(vector, dense) }];
    });
  }

  // Qdrant keeps document frequencies to itself (the IDF modifier); scoring falls back to uniform weights.
  async termStatistics(): Promise<TermStatistics> {
    return { total: 0, documents: new Map() };
  }

  async pendingChunks(limit: number): Promise<readonly StoredChunk[]> {
    await this.#ensureReady();
    const page = await this.#call("pending chunks", () =>
      this.#client.scroll(this.#collection, { filter: { must_not: [hasDense] }, limit, with_payload: true }),
    );
    return page.points.map((point) => toChunk(point.payload));
  }

  async setVectors(model: string, entries: readonly ChunkVector[]): Promise<void> {
    await this.#ensureReady();
    if (entries.length === 0) return;
    const collection = this.#collection;
    const byId = new Map(entries.map((entry) => [pointId(entry.chunkId), entry]));
    await this.#call("set vectors", async () => {
      const existing = await this.#client.retrieve(collection, {
        ids: [...byId.keys()],
        with_payload: ["hash"],
      });
      const current = existing.filter((point) => {
        const hash = z.object({ hash: z.string() }).safeParse(point.payload);
        return hash.success && hash.data.hash === byId.get(String(point.id))?.hash;
      });
      if (current.length === 0) return;
      await this.#client.updateVectors(collection, {
        wait: true,
        points: current.map((point) => ({
          id: point.id,
          vector: { [DENSE]: [...byId.get(String(point.id))!.vector] },
        })),
      });
      await this.#client.setPayload(collection, {
        wait: true,
        payload: { embedding_model: model },
        points: current.map((point) => point.id),
      });
    });
  }

  async cachedVectors(
    model: string,
    hashes: readonly string[],
  ): Promise<ReadonlyMap<string, readonly number[]>> {
    await this.#ensureReady();
    const found = new Map<string, readonly number[]>();
    if (hashes.length === 0) return found;
    const points = await this.#call("cached vectors", () =>
      this.#scrollAll(
        {
          must: [
            { key: "hash", match: { any: [...hashes] } },
            { key: "embedding_model", match: { value: model } },
            hasDense,
          ],
        },
        true,
      ),
    );
    for (const point of points) {
      const dense = denseOf(point.vector);
      const hash = z.object({ hash: z.string() }).safeParse(point.payload);
      if (dense !== undefined && hash.success) found.set(hash.data.hash, dense);
    }
    return found;
  }

  async clearVectors(): Promise<void> {
    await this.#ensureReady();
    await this.#call("clear vectors", () =>
      this.#client.deleteVectors(this.#collection, {
        wait: true,
        filter: { must: [hasDense] },
        vector: [DENSE],
      }),
    );
  }

  // The points are the cache here: a Qdrant reindex re-embeds every chunk.
  async clear(): Promise<void> {
    await this.#ensureReady();
    await this.#call("clear", () =>
      this.#client.delete(this.#collection, { wait: true, filter: { must: [] } }),
    );
  }

  async stats(): Promise<BackendStats> {
    await this.#ensureReady();
    return this.#call("stats", async () => {
      const embedded = await this.#count({ must: [hasDense] });
      const sample = await this.#client.scroll(this.#collection, {
        filter: { must: [hasDense] },
        limit: 1,
        with_payload: ["embedding_model"],
      });
      const model = modelSchema.safeParse(sample.points[0]?.payload);
      return {
        files: await this.#count({ must: [firstChunk] }),
        chunks: await this.#count({}),
        embeddedChunks: embedded,
        dimensions: this.#dimensions,
        vectorModel: model.success ? model.data.embedding_model : undefined,
      };
    });
  }

  async close(): Promise<void> {}

  /** Runs one Qdrant request, turning whatever the client throws into an Almanac error naming `operation`. */
  async #call<T>(operation: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw toQdrantError(error, this.#url, operation);
    }
  }

  /** Creates or checks the collection once; a failure is not remembered, so the next call retries. */
  #ensureReady(): Promise<void> {
    this.#ready ??= this.#call("collection setup", () =>
      setUpCollection(this.#client, {
        collection: this.#collection,
        dimensions: this.#dimensions,
        logger: this.#logger,
      }),
    ).catch((error: unknown) => {
      this.#ready = undefined;
      throw error;
    });
    return this.#ready;
  }

  /** Every point matching `filter`, page by page. */
  async #scrollAll(filter: Record<string, unknown>, withVector: boolean): Promise<ScrolledPoint[]> {
    const points: ScrolledPoint[] = [];
    let offset: string | number | undefined;
    do {
      const page = await this.#client.scroll(this.#collection, {
        filter,
        limit: 512,
        with_payload: true,
        with_vector: withVector ? [DENSE] : false,
        ...(offset === undefined ? {} : { offset }),
      });
      for (const point of page.points)
        points.push({ id: point.id, payload: point.payload, vector: point.vector });
      const next = page.next_page_offset;
      offset = typeof next === "string" || typeof next === "number" ? next : undefined;
    } while (offset !== undefined);
    return points;
  }

  async #count(filter: Record<string, unknown>): Promise<number> {
    return (await this.#client.count(this.#collection, { filter, exact: true })).count;
  }
}
