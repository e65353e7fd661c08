import type { IndexChunk } from "./types.js";

/** What the index worker is started with: chunk sizes (a custom token counter keeps preparation on the main thread). */
export interface IndexWorkerSettings {
  readonly maxTokens?: number;
  readonly overlapTokens?: number;
}

/** A file for the index worker to prepare. */
export interface IndexWorkerRequest {
  readonly id: number;
  readonly path: string;
  readonly bytes: Uint8Array;
}

/** A prepared chunk as the worker sends it: its terms as one string when they survive the round trip. */
export type WireChunk = Omit<IndexChunk, "terms" | "termText"> &
  ({ readonly terms: readonly string[] } | { readonly termText: string });

/** The index worker's messages: ready after its warm-up, then one reply per request. */
export type IndexWorkerReply =
  | { readonly kind: "ready" }
  | { readonly kind: "prepared"; readonly id: number; readonly chunks: readonly WireChunk[] }
  | { readonly kind: "failed"; readonly id: number };

/**
 * A chunk for the trip to the main thread. Its terms go joined by spaces (structured clone copies one string
 * instead of ~230; the main thread no longer joins them for SQLite) unless splitting that string would not give
 * them back: no terms, or a term holding a space.
 */
export function toWireChunk(chunk: IndexChunk): WireChunk {
  const { terms, termText: _termText, ...rest } = chunk;
  if (terms.length === 0) return { ...rest, terms };
  const termText = terms.join(" ");
  let spaces = 0;
  for (let at = termText.indexOf(" "); at >= 0; at = termText.indexOf(" ", at + 1)) spaces += 1;
  return spaces === terms.length - 1 ? { ...rest, termText } : { ...rest, terms };
}

/** The chunk back from its wire form; a joined `termText` is split into `terms` only if something asks for them. */
export function fromWireChunk(wire: WireChunk): IndexChunk {
  if (!("termText" in wire)) return wire;
  const { termText } = wire;
  let terms: readonly string[] | undefined;
  return {
    ...wire,
    get terms() {
      terms ??= termText.split(" ");
      return terms;
    },
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null;

const optionalNumber = (value: unknown): boolean => value === undefined || typeof value === "number";

/** Checks the worker's start-up data. */
export function isIndexWorkerSettings(value: unknown): value is IndexWorkerSettings {
  return isRecord(value) && optionalNumber(value.maxTokens) && optionalNumber(value.overlapTokens);
}

/** Checks a message to the worker. */
export function isIndexWorkerRequest(value: unknown): value is IndexWorkerRequest {
  return (
    isRecord(value) &&
    typeof value.id === "number" &&
    typeof value.path === "string" &&
    value.bytes instanceof Uint8Array
  );
}

/**
 * Checks a message from the worker. The chunks are the worker's own `prepareIndexChunks` output (a thread of
 * this process, not outside input), so only their container is checked.
 */
export function isIndexWorkerReply(value: unknown): value is IndexWorkerReply {
  if (!isRecord(value)) return false;
  if (value.kind === "ready") return true;
  if (typeof value.id !== "number") return false;
  return value.kind === "failed" || (value.kind === "prepared" && Array.isArray(value.chunks));
}
