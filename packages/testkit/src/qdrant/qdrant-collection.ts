import { idKey, matchesFilter, UnsupportedByFakeError } from "./qdrant-filter.js";
import {
  type Distance,
  denseScore,
  higherIsBetter,
  idf,
  normalize,
  reciprocalRankFusion,
  type SparseVector,
  sparseScore,
} from "./qdrant-scoring.js";

// One collection of the fake: its config, points and the operations on them. Bodies reach here
// already validated against the schema; semantic errors carry Qdrant's status and wording.

type Json = Record<string, unknown>;
type PointId = string | number;
type StoredVector = number[] | SparseVector;

interface StoredPoint {
  readonly id: PointId;
  vectors: Map<string, StoredVector>;
  payload: Json;
}

interface Scored {
  readonly point: StoredPoint;
  readonly score: number;
}

/** An error Qdrant would answer with this status and message. */
export class QdrantRequestError extends Error {
  override readonly name = "QdrantRequestError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const list = (value: unknown): unknown[] =>
  value === undefined || value === null ? [] : Array.isArray(value) ? value : [value];
const isSparse = (value: unknown): value is SparseVector =>
  typeof value === "object" && value !== null && !Array.isArray(value) && "indices" in value;

function compareIds(a: PointId, b: PointId): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  if (typeof a === "number") return -1;
  if (typeof b === "number") return 1;
  return idKey(a) < idKey(b) ? -1 : idKey(a) > idKey(b) ? 1 : 0;
}

/** A collection with Qdrant's semantics for the operations Almanac uses. */
export class FakeCollection {
  private readonly points = new Map<string, StoredPoint>();
  private readonly payloadIndexes = new Map<string, unknown>();
  private readonly dense = new Map<string, { size: number; distance: Distance }>();
  private readonly sparse = new Map<string, { modifier: string }>();
  private readonly unnamed: boolean;

  constructor(private readonly config: Json) {
    const vectors = config.vectors as Json | undefined;
    this.unnamed = vectors !== undefined && typeof vectors.size === "number";
    if (vectors !== undefined) {
      const named = this.unnamed ? { "": vectors } : vectors;
      for (const [name, params] of Object.entries(named)) {
        const { size, distance } = params as { size: number; distance: Distance };
        this.dense.set(name, { size, distance });
      }
    }
    for (const [name, params] of Object.entries((config.sparse_vectors as Json | null | undefined) ?? {})) {
      this.sparse.set(name, { modifier: String((params as Json | null)?.modifier ?? "none") });
    }
  }

  /** `GET /collections/{name}`: the CollectionInfo result. */
  info(): Json {
    return {
      status: "green",
      optimizer_status: "ok",
      indexed_vectors_count: 0,
      points_count: this.points.size,
      segments_count: 1,
      config: {
        params: {
          vectors: this.config.vectors ?? {},
          shard_number: 1,
          replication_factor: 1,
          write_consistency_factor: 1,
          on_disk_payload: true,
          ...(this.sparse.size === 0 ? {} : { sparse_vectors: this.config.sparse_vectors }),
        },
        hnsw_config: {
          m: 16,
          ef_construct: 100,
          full_scan_threshold: 10000,
          max_indexing_threads: 0,
          on_disk: false,
        },
        optimizer_config: {
          deleted_threshold: 0.2,
          vacuum_min_vector_number: 1000,
          default_segment_number: 0,
          max_segment_size: null,
          memmap_threshold: null,
          indexing_threshold: 10000,
          flush_interval_sec: 5,
          max_optimization_threads: null,
        },
        wal_config: { wal_capacity_mb: 32, wal_segments_ahead: 0 },
        quantization_config: null,
      },
      payload_schema: Object.fromEntries(
        [...this.payloadIndexes].map(([field, schema]) => [
          field,
          {
            data_type: typeof schema === "string" ? schema : (schema as Json).type,
            points: this.points.size,
          },
        ]),
      ),
    };
  }

  createPayloadIndex(body: Json): void {
    this.payloadIndexes.set(String(body.field_name), body.field_schema ?? "keyword");
  }

  private checkVector(name: string, vector: unknown): StoredVector {
    const dense = this.dense.get(name);
    if (dense !== undefined) {
      if (!Array.isArray(vector) || vector.some((value) => typeof value !== "number")) {
        throw new QdrantRequestError(
          400,
          `Wrong input: Conversion between sparse and regular vectors failed`,
        );
      }
      if (vector.length !== dense.size) {
        throw new QdrantRequestError(
          400,
          `Wrong input: Vector dimension error: expected dim: ${dense.size}, got ${vector.length}`,
        );
      }
      return dense.distance === "Cosine" ? normalize(vector as number[]) : [...(vector as number[])];
    }
    if (this.sparse.has(name)) {
      if (!isSparse(vector)) {
        throw new QdrantRequestError(
          400,
          `Wrong input: Conversion between sparse and regular vectors failed`,
        );
      }
      if (
        vector.indices.length !== vector.values.length ||
        new Set(vector.indices).size !== vector.indices.length
      ) {
        throw new QdrantRequestError(
          400,
          "Validation error in JSON body: sparse vector indices must be unique and match values",
        );
      }
      return { indices: [...vector.indices], values: [...vector.values] };
    }
    throw new QdrantRequestError(400, `Wrong input: Not existing vector name error: ${name}`);
  }

  private vectorsOf(struct: unknown): Map<string, StoredVector> {
    if (Array.isArray(struct)) return new Map([["", this.checkVector("", struct)]]);
    if (typeof struct !== "object" || struct === null) throw new UnsupportedByFakeError("vector struct");
    if ("model" in struct) throw new UnsupportedByFakeError("inference objects (Document, Image)");
    return new Map(Object.entries(struct).map(([name, vector]) => [name, this.checkVector(name, vector)]));
  }

  upsert(body: Json): void {
    if (body.batch !== undefined) throw new UnsupportedByFakeError("batch upserts");
    if (body.update_filter != null || (body.update_mode != null && body.update_mode !== "upsert")) {
      throw new UnsupportedByFakeError("conditional upserts");
    }
    const prepared = list(body.points).map((raw) => {
      const point = raw as Json;
      return {
        id: point.id as PointId,
        vectors: this.vectorsOf(point.vector),
        payload: { ...((point.payload as Json | null) ?? {}) },
      };
    });
    for (const point of prepared) this.points.set(idKey(point.id), point);
  }

  private filterable(point: StoredPoint) {
    return { id: point.id, payload: point.payload, vectorNames: new Set(point.vectors.keys()) };
  }

  private select(filter: unknown): StoredPoint[] {
    return [...this.points.values()]
      .filter((point) => matchesFilter(this.filterable(point), filter))
      .sort((a, b) => compareIds(a.id, b.id));
  }

  /** Points named by `points` (ids) or matched by `filter`. */
  private selected(body: Json): StoredPoint[] {
    if (Array.isArray(body.points)) {
      return body.points.flatMap((id) => {
        const point = this.points.get(idKey(id));
        return point === undefined ? [] : [point];
      });
    }
    return this.select(body.filter);
  }

  deletePoints(body: Json): void {
    for (const point of this.selected(body)) this.points.delete(idKey(point.id));
  }

  updateVectors(body: Json): void {
    if (body.update_filter != null) throw new UnsupportedByFakeError("conditional vector updates");
    const updates = list(body.points).map((raw) => {
      const entry = raw as Json;
      const point = this.points.get(idKey(entry.id));
      if (point === undefined)
        throw new QdrantRequestError(404, `Not found: No point with id ${String(entry.id)} found`);
      return { point, vectors: this.vectorsOf(entry.vector) };
    });
    for (const { point, vectors } of updates) point.vectors = new Map([...point.vectors, ...vectors]);
  }

  deleteVectors(body: Json): void {
    const names = list(body.vector).map(String);
    for (const name of names) {
      if (!this.dense.has(name) && !this.sparse.has(name)) {
        throw new QdrantRequestError(400, `Wrong input: Not existing vector name error: ${name}`);
      }
    }
    for (const point of this.selected(body)) for (const name of names) point.vectors.delete(name);
  }

  setPayload(body: Json): void {
    if (body.key != null) throw new UnsupportedByFakeError("set_payload with a key path");
    for (const point of this.selected(body)) point.payload = { ...point.payload, ...(body.payload as Json) };
  }

  count(body: Json): number {
    return this.select(body.filter).length;
  }

  /** A point as a Record: payload and vectors as the selectors ask (`defaultPayload` differs per API). */
  private record(
    point: StoredPoint,
    withPayload: unknown,
    withVector: unknown,
    defaultPayload: boolean,
  ): Json {
    return {
      id: point.id,
      payload: this.payloadOf(point, withPayload ?? defaultPayload),
      vector: this.vectorOf(point, withVector ?? false),
    };
  }

  private payloadOf(point: StoredPoint, selector: unknown): Json | null {
    if (selector === false) return null;
    if (selector === true) return point.payload;
    const entries = Object.entries(point.payload);
    if (Array.isArray(selector)) return Object.fromEntries(entries.filter(([key]) => selector.includes(key)));
    const { include, exclude } = selector as { include?: string[]; exclude?: string[] };
    if (include !== undefined) return Object.fromEntries(entries.filter(([key]) => include.includes(key)));
    return Object.fromEntries(entries.filter(([key]) => !(exclude ?? []).includes(key)));
  }

  private vectorOf(point: StoredPoint, selector: unknown): unknown {
    if (selector === false) return null;
    const names = selector === true ? [...point.vectors.keys()] : (selector as string[]);
    if (this.unnamed && selector === true && this.sparse.size === 0) return point.vectors.get("") ?? null;
    return Object.fromEntries(
      names.flatMap((name) => (point.vectors.has(name) ? [[name, point.vectors.get(name)]] : [])),
    );
  }

  retrieve(body: Json): Json[] {
    return list(body.ids).flatMap((id) => {
      const point = this.points.get(idKey(id));
      return point === undefined ? [] : [this.record(point, body.with_payload, body.with_vector, true)];
    });
  }

  scroll(body: Json): Json {
    if (body.order_by != null) throw new UnsupportedByFakeError("scroll with order_by");
    const limit = typeof body.limit === "number" ? body.limit : 10;
    let matching = this.select(body.filter);
    if (body.offset != null)
      matching = matching.filter((point) => compareIds(point.id, body.offset as PointId) >= 0);
    const page = matching.slice(0, limit);
    return {
      points: page.map((point) => this.record(point, body.with_payload, body.with_vector, true)),
      next_page_offset: matching[limit]?.id ?? null,
    };
  }

  /** `POST /points/query`: nearest (dense or sparse), by point id, or RRF over prefetches. */
  query(body: Json): Json {
    const ranked = this.rank(body, this.select(body.filter));
    const offset = typeof body.offset === "number" ? body.offset : 0;
    const limit = typeof body.limit === "number" ? body.limit : 10;
    return {
      points: ranked.slice(offset, offset + limit).map(({ point, score }) => ({
        ...this.record(point, body.with_payload, body.with_vector, false),
        version: 0,
        score,
      })),
    };
  }

  private rank(request: Json, candidates: StoredPoint[]): Scored[] {
    const prefetches = list(request.prefetch) as Json[];
    const query = request.query as unknown;
    if (prefetches.length > 0) {
      const rankings = prefetches.map((prefetch) => {
        const inner = this.rank(
          prefetch,
          candidates.filter((point) => matchesFilter(this.filterable(point), prefetch.filter)),
        );
        return inner.slice(0, typeof prefetch.limit === "number" ? prefetch.limit : 10);
      });
      const fusion = (query as Json | null | undefined)?.fusion;
      if (fusion === "rrf") {
        return reciprocalRankFusion(rankings, (entry) => idKey(entry.point.id)).map(({ item, score }) => ({
          point: item.point,
          score,
        }));
      }
      if (fusion !== undefined || query === undefined || query === null) {
        throw new UnsupportedByFakeError(`query ${JSON.stringify(query)} over prefetches`);
      }
      const pool = new Map(rankings.flat().map((entry) => [idKey(entry.point.id), entry.point]));
      return this.nearest(request, [...pool.values()]);
    }
    if (typeof query === "object" && query !== null && "fusion" in query) {
      throw new QdrantRequestError(400, "Bad request: Fusion queries need prefetches");
    }
    return this.nearest(request, candidates);
  }

  private nearest(request: Json, candidates: StoredPoint[]): Scored[] {
    let input = request.query as unknown;
    if (typeof input === "object" && input !== null && !Array.isArray(input) && "nearest" in input) {
      if ((input as Json).mmr != null) throw new UnsupportedByFakeError("MMR");
      input = (input as Json).nearest;
    }
    const using = typeof request.using === "string" ? request.using : "";
    if (typeof input === "string" || typeof input === "number") {
      const source = this.points.get(idKey(input));
      if (source === undefined)
        throw new QdrantRequestError(404, `Not found: No point with id ${String(input)} found`);
      input = source.vectors.get(using);
    }
    const threshold = typeof request.score_threshold === "number" ? request.score_threshold : undefined;
    const dense = this.dense.get(using);
    if (dense !== undefined && Array.isArray(input) && input.every((value) => typeof value === "number")) {
      if (input.length !== dense.size) {
        throw new QdrantRequestError(
          400,
          `Wrong input: Vector dimension error: expected dim: ${dense.size}, got ${input.length}`,
        );
      }
      const better = higherIsBetter(dense.distance);
      const query = input as number[];
      return candidates
        .flatMap((point) => {
          const stored = point.vectors.get(using);
          return Array.isArray(stored) ? [{ point, score: denseScore(dense.distance, query, stored) }] : [];
        })
        .filter(({ score }) => threshold === undefined || (better ? score >= threshold : score <= threshold))
        .sort(
          (a, b) => (better ? b.score - a.score : a.score - b.score) || compareIds(a.point.id, b.point.id),
        );
    }
    const sparse = this.sparse.get(using);
    if (sparse !== undefined && isSparse(input)) {
      const weightOf = this.idfWeights(using, sparse.modifier === "idf");
      const query = input;
      return candidates
        .flatMap((point) => {
          const stored = point.vectors.get(using);
          const score = isSparse(stored) ? sparseScore(query, stored, weightOf) : undefined;
          return score === undefined ? [] : [{ point, score }];
        })
        .filter(({ score }) => threshold === undefined || score >= threshold)
        .sort((a, b) => b.score - a.score || compareIds(a.point.id, b.point.id));
    }
    if (dense === undefined && sparse === undefined) {
      throw new QdrantRequestError(400, `Wrong input: Not existing vector name error: ${using}`);
    }
    if (input === undefined) throw new UnsupportedByFakeError("queries without a vector");
    throw new QdrantRequestError(400, `Wrong input: Conversion between sparse and regular vectors failed`);
  }

  private idfWeights(name: string, enabled: boolean): (index: number) => number {
    if (!enabled) return () => 1;
    const holders = [...this.points.values()].flatMap((point) => {
      const vector = point.vectors.get(name);
      return isSparse(vector) ? [vector] : [];
    });
    const frequency = new Map<number, number>();
    for (const vector of holders)
      for (const index of vector.indices) frequency.set(index, (frequency.get(index) ?? 0) + 1);
    return (index) => idf(holders.length, frequency.get(index) ?? 0);
  }
}
