import { type Logger, silentLogger, UserError } from "@almanac/core";
import { matchesPathFilter } from "@almanac/memory-files";
import { QdrantClient } from "@qdrant/js-client-rest";
import { z } from "zod";
import { toQdrantError } from "./qdrant-errors.js";
import {
  collectionSchema,
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
import type { BackendHit, MemoryIndexBackend, StoredChunk, TermStatistics } from "./types.js";
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
  const { collection, dimensions } = options;
  const logger = (options.logger ?? silentLogger).child({
    component: "memory-index",
    backend: "qdrant",
    collection,
  });
  const averageTerms = options.averageTerms ?? 300;
  const client = new QdrantClient({
    url: options.url,
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    timeout: options.timeoutMs ?? 10_000,
    checkCompatibility: false,
  });
  let ready: Promise<void> | undefined;

  const call = async <T>(operation: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw toQdrantError(error, options.url, operation);
    }
  };

  const checkDimensions = async (): Promise<void> => {
    const info = collectionSchema.safeParse(await client.getCollection(collection));
    const size = info.success ? info.data.config.params.vectors?.[DENSE]?.size : undefined;
    if (size === undefined) {
      throw new UserError(
        "index.incompatible_collection",
        `Qdrant collection "${collection}" has no "${DENSE}" vector: it was not created by Almanac. Use another collection name.`,
      );
    }
    if (size !== dimensions) {
      throw new UserError(
        "index.dimensions_mismatch",
        `Qdrant collection "${collection}" holds ${size}-dimensional vectors but ${dimensions} were configured (was the embedding model changed?). ` +
          `Set the dimensions back to ${size}, or use a new collection name (the index is rebuilt from the Markdown files).`,
      );
    }
  };

  const create = async (): Promise<void> => {
    const { exists } = await client.collectionExists(collection);
    if (!exists) {
      try {
        await client.createCollection(collection, {
          vectors: { [DENSE]: { size: dimensions, distance: "Cosine" } },
          sparse_vectors: { [TEXT]: { modifier: "idf" } },
        });
        for (const [field, schema] of [
          ["path", "keyword"],
          ["source", "keyword"],
          ["hash", "keyword"],
          ["embedding_model", "keyword"],
          ["chunk_index", "integer"],
        ] as const) {
          await client.createPayloadIndex(collection, {
            field_name: field,
            field_schema: schema,
            wait: true,
          });
        }
        logger.info({ dimensions }, "created Qdrant collection");
        return;
      } catch (error) {
        // Another process may have created it meanwhile: then check it like an existing one.
        if (!(await client.collectionExists(collection)).exists) throw error;
      }
    }
    await checkDimensions();
  };

  /** Creates or checks the collection once; a failure is not remembered, so the next call retries. */
  const ensureReady = (): Promise<void> => {
    ready ??= call("collection setup", create).catch((error: unknown) => {
      ready = undefined;
      throw error;
    });
    return ready;
  };

  const scrollAll = async (filter: Record<string, unknown>, withVector: boolean) => {
    const points: { id: string | number; payload: unknown; vector: unknown }[] = [];
    let offset: string | number | undefined;
    do {
      const page = await client.scroll(collection, {
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
  };

  const count = async (filter: Record<string, unknown>) =>
    (await client.count(collection, { filter, exact: true })).count;

  const backend: MemoryIndexBackend = {
    kind: "qdrant",

    async upsertFile(file, chunks, embeddings) {
      await ensureReady();
      for (const vector of embeddings?.vectors ?? []) {
        if (vector !== undefined && vector.length !== dimensions) {
          throw new UserError(
            "index.dimensions_mismatch",
            `Qdrant collection "${collection}" takes ${dimensions}-dimensional vectors; got ${vector.length}.`,
          );
        }
      }
      const points = chunks.map((chunk, index) =>
        toPoint(file, chunk, index, embeddings?.vectors[index], embeddings?.model, averageTerms),
      );
      await call("upsert", async () => {
        // New points first, then the file's other points: readers never see the file missing.
        for (let start = 0; start < points.length; start += UPSERT_BATCH) {
          await client.upsert(collection, { wait: true, points: points.slice(start, start + UPSERT_BATCH) });
        }
        await client.delete(collection, {
          wait: true,
          filter: { must: [pathIs(file.path)], must_not: [{ has_id: points.map((point) => point.id) }] },
        });
      });
    },

    async upsertFiles(files) {
      // One file at a time: Qdrant has no transaction across files, and each file's upsert keeps it whole.
      for (const { file, chunks, embeddings } of files) await backend.upsertFile(file, chunks, embeddings);
    },

    async deleteFile(path) {
      await ensureReady();
      await call("delete", () => client.delete(collection, { wait: true, filter: { must: [pathIs(path)] } }));
    },

    async fileState(path) {
      await ensureReady();
      const page = await call("file state", () =>
        client.scroll(collection, {
          filter: { must: [pathIs(path), firstChunk] },
          limit: 1,
          with_payload: true,
        }),
      );
      const point = page.points[0];
      return point === undefined ? undefined : toFile(point.payload);
    },

    async listFiles() {
      await ensureReady();
      const points = await call("list files", () => scrollAll({ must: [firstChunk] }, false));
      return points.map((point) => toFile(point.payload)).sort((a, b) => a.path.localeCompare(b.path));
    },

    async search(query): Promise<BackendHit[]> {
      await ensureReady();
      const sparse = querySparseVector(query.terms);
      const vector = query.vector;
      if (vector !== undefined && vector.length !== dimensions) {
        throw new UserError(
          "index.dimensions_mismatch",
          `Query vector has ${vector.length} dimensions; the collection ${dimensions}.`,
        );
      }
      const filter = query.paths === undefined ? {} : { filter: scopeFilter(query.paths) };
      // Points are filtered by scope in Qdrant (before the limit) and checked again here.
      const inScope = (chunk: StoredChunk) =>
        query.paths === undefined || matchesPathFilter(query.paths, chunk.path);
      if (vector === undefined) {
        if (sparse.indices.length === 0) return [];
        const response = await call("search", () =>
          client.query(collection, {
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
      const response = await call("search", () =>
        client.query(collection, {
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
        return [
          dense === undefined ? { chunk } : { chunk, vectorSimilarity: cosineSimilarity(vector, dense) },
        ];
      });
    },

    // Qdrant keeps document frequencies to itself (the IDF modifier); scoring falls back to uniform weights.
    async termStatistics(): Promise<TermStatistics> {
      return { total: 0, documents: new Map() };
    },

    async pendingChunks(limit) {
      await ensureReady();
      const page = await call("pending chunks", () =>
        client.scroll(collection, { filter: { must_not: [hasDense] }, limit, with_payload: true }),
      );
      return page.points.map((point) => toChunk(point.payload));
    },

    async setVectors(model, entries) {
      await ensureReady();
      if (entries.length === 0) return;
      const byId = new Map(entries.map((entry) => [pointId(entry.chunkId), entry]));
      await call("set vectors", async () => {
        const existing = await client.retrieve(collection, { ids: [...byId.keys()], with_payload: ["hash"] });
        const current = existing.filter((point) => {
          const hash = z.object({ hash: z.string() }).safeParse(point.payload);
          return hash.success && hash.data.hash === byId.get(String(point.id))?.hash;
        });
        if (current.length === 0) return;
        await client.updateVectors(collection, {
          wait: true,
          points: current.map((point) => ({
            id: point.id,
            vector: { [DENSE]: [...byId.get(String(point.id))!.vector] },
          })),
        });
        await client.setPayload(collection, {
          wait: true,
          payload: { embedding_model: model },
          points: current.map((point) => point.id),
        });
      });
    },

    async cachedVectors(model, hashes) {
      await ensureReady();
      const found = new Map<string, readonly number[]>();
      if (hashes.length === 0) return found;
      const points = await call("cached vectors", () =>
        scrollAll(
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
    },

    async clearVectors() {
      await ensureReady();
      await call("clear vectors", () =>
        client.deleteVectors(collection, { wait: true, filter: { must: [hasDense] }, vector: [DENSE] }),
      );
    },

    // The points are the cache here: a Qdrant reindex re-embeds every chunk.
    async clear() {
      await ensureReady();
      await call("clear", () => client.delete(collection, { wait: true, filter: { must: [] } }));
    },

    async stats() {
      await ensureReady();
      return call("stats", async () => {
        const embedded = await count({ must: [hasDense] });
        const sample = await client.scroll(collection, {
          filter: { must: [hasDense] },
          limit: 1,
          with_payload: ["embedding_model"],
        });
        const model = modelSchema.safeParse(sample.points[0]?.payload);
        return {
          files: await count({ must: [firstChunk] }),
          chunks: await count({}),
          embeddedChunks: embedded,
          dimensions,
          vectorModel: model.success ? model.data.embedding_model : undefined,
        };
      });
    },

    async close() {},
  };
  return backend;
}
