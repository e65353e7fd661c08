import type { IndexChunk, MemoryChunk } from "./types.js";

/** Chunks for the index worker to analyse: their searchable texts (`searchableText`), in order. */
export interface IndexWorkerRequest {
  readonly id: number;
  readonly texts: readonly string[];
}

/** A text's analysis as the worker sends it: its terms as one string when they survive the round trip. */
export type WireAnalysis = { readonly textLength: number } & (
  | { readonly terms: readonly string[] }
  | { readonly termText: string }
);

/** The index worker's messages: ready after its warm-up, then one reply per request. */
export type IndexWorkerReply =
  | { readonly kind: "ready" }
  | { readonly kind: "analysed"; readonly id: number; readonly analyses: readonly WireAnalysis[] }
  | { readonly kind: "failed"; readonly id: number };

/**
 * An analysis for the trip to the main thread. Its terms go joined by spaces (structured clone copies one string
 * instead of ~230; the main thread does not join them for SQLite) unless splitting that string would not give
 * them back: no terms, or a term holding a space.
 */
export function toWireAnalysis(terms: readonly string[], textLength: number): WireAnalysis {
  if (terms.length === 0) return { terms, textLength };
  const termText = terms.join(" ");
  let spaces = 0;
  for (let at = termText.indexOf(" "); at >= 0; at = termText.indexOf(" ", at + 1)) spaces += 1;
  return spaces === terms.length - 1 ? { termText, textLength } : { terms, textLength };
}

/** The chunk with its analysis from the worker; a joined `termText` is split into `terms` only if something asks. */
export function withWireAnalysis(chunk: MemoryChunk, wire: WireAnalysis): IndexChunk {
  if (!("termText" in wire)) return { ...chunk, terms: wire.terms, textLength: wire.textLength };
  const { termText } = wire;
  let terms: readonly string[] | undefined;
  return {
    ...chunk,
    termText,
    textLength: wire.textLength,
    get terms() {
      terms ??= termText.split(" ");
      return terms;
    },
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null;

/** Checks a message to the worker. */
export function isIndexWorkerRequest(value: unknown): value is IndexWorkerRequest {
  return (
    isRecord(value) &&
    typeof value.id === "number" &&
    Array.isArray(value.texts) &&
    value.texts.every((text) => typeof text === "string")
  );
}

/**
 * Checks a message from the worker. The analyses are the worker's own output (a thread of this process, not
 * outside input), so only their container is checked.
 */
export function isIndexWorkerReply(value: unknown): value is IndexWorkerReply {
  if (!isRecord(value)) return false;
  if (value.kind === "ready") return true;
  if (typeof value.id !== "number") return false;
  return value.kind === "failed" || (value.kind === "analysed" && Array.isArray(value.analyses));
}
