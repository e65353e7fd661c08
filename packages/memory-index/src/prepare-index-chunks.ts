import { type ChunkMarkdownOptions, chunkMarkdown } from "./chunk-markdown.js";
import { searchableText } from "./hybrid-score.js";
import { analyzeChunkText } from "./text-analysis.js";
import type { IndexChunk, MemoryChunk } from "./types.js";

/**
 * A memory file's chunks with their token counts, not yet analysed: the half of preparing a file that stays on
 * the main thread when the index worker analyses (see chunk-preparer.ts).
 */
export function chunkIndexFile(
  relative: string,
  bytes: Uint8Array,
  chunking?: ChunkMarkdownOptions,
): MemoryChunk[] {
  // Buffer's decoding, not TextDecoder's: a byte-order mark stays in the text, as it always has.
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  return chunkMarkdown(relative, text, chunking);
}

/** A chunk with its index terms and scoring length, from the text the index analyses ({@link searchableText}). */
export function analyzedChunk(chunk: MemoryChunk): IndexChunk {
  const { terms, length } = analyzeChunkText(searchableText(chunk));
  return { ...chunk, terms, textLength: length };
}

/**
 * A memory file's chunks with their index terms and scoring lengths: the CPU half of indexing a file (token
 * counting, analysis), {@link chunkIndexFile} then {@link analyzedChunk}.
 */
export function prepareIndexChunks(
  relative: string,
  bytes: Uint8Array,
  chunking?: ChunkMarkdownOptions,
): IndexChunk[] {
  return chunkIndexFile(relative, bytes, chunking).map(analyzedChunk);
}
