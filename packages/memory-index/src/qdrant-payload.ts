import { type ScopePathFilter, SHARED_DIRECTORY } from "@almanac/memory-files";
import { z } from "zod";
import { documentSparseVector } from "./sparse-vector.js";
import type { IndexChunk, IndexedFile, StoredChunk } from "./types.js";
import { uuidV5 } from "./uuid-v5.js";

// Point layout of the Qdrant backend: names, payload schemas (responses are validated, not cast),
// filters and the chunk → point conversion.

/** Name of the dense vector. */
export const DENSE = "dense";
/** Name of the sparse text vector. */
export const TEXT = "text";
/** Namespace of point ids: UUIDv5(chunk id) under it, so the same chunk always lands on the same point. */
const POINT_NAMESPACE = "3f2b8c4e-6a1d-5e7f-9b0c-2d4e6f8a1b3c";

/** The point id of a chunk: UUIDv5 of its id, so re-indexing overwrites instead of duplicating. */
export function pointId(chunkId: string): string {
  return uuidV5(chunkId, POINT_NAMESPACE);
}
/** Points per upsert request. */
export const UPSERT_BATCH = 256;

const payloadSchema = z.object({
  chunk_id: z.string(),
  path: z.string(),
  source: z.enum(["memory", "daily", "notes"]),
  start_line: z.number(),
  end_line: z.number(),
  hash: z.string(),
  text: z.string(),
  headings: z.string(),
  updated_at: z.number(),
});
const fileSchema = z.object({
  path: z.string(),
  source: z.enum(["memory", "daily", "notes"]),
  file_hash: z.string(),
  file_mtime: z.number(),
  file_size: z.number(),
});
const denseSchema = z.object({ [DENSE]: z.array(z.number()) });
/** Payload field naming the model of a point's dense vector. */
export const modelSchema = z.object({ embedding_model: z.string() });
/** The part of `getCollection` checked against the configuration. */
export const collectionSchema = z.object({
  config: z.object({
    params: z.object({ vectors: z.record(z.string(), z.object({ size: z.number() })).optional() }),
  }),
});
/** Joins a chunk's heading path in one payload field. */
const headingSeparator = "\u001f";

/** A point payload as a stored chunk (validated). */
export function toChunk(payload: unknown): StoredChunk {
  const parsed = payloadSchema.parse(payload);
  return {
    id: parsed.chunk_id,
    path: parsed.path,
    startLine: parsed.start_line,
    endLine: parsed.end_line,
    headings: parsed.headings === "" ? [] : parsed.headings.split(headingSeparator),
    text: parsed.text,
    hash: parsed.hash,
    source: parsed.source,
    updatedAt: parsed.updated_at,
  };
}

/** The file state carried by a file's first point (validated). */
export function toFile(payload: unknown): IndexedFile {
  const parsed = fileSchema.parse(payload);
  return {
    path: parsed.path,
    source: parsed.source,
    hash: parsed.file_hash,
    mtimeMs: parsed.file_mtime,
    size: parsed.file_size,
  };
}

/** A point's dense vector, when the response holds one. */
export function denseOf(vector: unknown): number[] | undefined {
  const parsed = denseSchema.safeParse(vector);
  return parsed.success ? parsed.data[DENSE] : undefined;
}

/** Filter: points of one file. */
export const pathIs = (path: string) => ({ key: "path", match: { value: path } });
/** Filter: the first point of each file (which carries the file state). */
export const firstChunk = { key: "chunk_index", match: { value: 0 } };
/** Filter: points that have a dense vector. */
export const hasDense = { has_vector: DENSE };

/** The shared chat folder a file belongs to (`shared/<folder>/…`), stored on its points to filter by scope. */
function sharedFolderOf(path: string): string | undefined {
  const segments = path.split("/");
  return segments[0] === SHARED_DIRECTORY && segments.length > 2 ? segments[1] : undefined;
}

/**
 * Filter: the points a memory scope may see. A shared chat's prefix `shared/<folder>/` matches its
 * `shared_folder`; the owner's `excludePrefix: "shared/"` keeps the points without one.
 */
export function scopeFilter(filter: ScopePathFilter): Record<string, unknown> {
  if (filter.prefix !== undefined) {
    const folder = sharedFolderOf(`${filter.prefix}x`);
    // A prefix that is not one shared folder matches nothing here (code filters the rest).
    return { must: [{ key: "shared_folder", match: { value: folder ?? "\u0000" } }] };
  }
  return filter.excludePrefix === `${SHARED_DIRECTORY}/`
    ? { must: [{ is_empty: { key: "shared_folder" } }] }
    : {};
}

/** The Qdrant point of a chunk: deterministic id, sparse text vector, dense vector when given, flat payload. */
export function toPoint(
  file: IndexedFile,
  chunk: IndexChunk,
  index: number,
  dense: readonly number[] | undefined,
  model: string | undefined,
  averageTerms: number,
) {
  const sparse = documentSparseVector(chunk.terms, averageTerms);
  return {
    id: pointId(chunk.id),
    vector: {
      ...(sparse.indices.length > 0 ? { [TEXT]: sparse } : {}),
      ...(dense === undefined ? {} : { [DENSE]: [...dense] }),
    },
    payload: {
      chunk_id: chunk.id,
      path: file.path,
      source: file.source,
      start_line: chunk.startLine,
      end_line: chunk.endLine,
      hash: chunk.hash,
      text: chunk.text,
      headings: chunk.headings.join(headingSeparator),
      updated_at: file.mtimeMs,
      chunk_index: index,
      ...(sharedFolderOf(file.path) === undefined ? {} : { shared_folder: sharedFolderOf(file.path) }),
      ...(dense === undefined || model === undefined ? {} : { embedding_model: model }),
      ...(index === 0 ? { file_hash: file.hash, file_mtime: file.mtimeMs, file_size: file.size } : {}),
    },
  };
}
