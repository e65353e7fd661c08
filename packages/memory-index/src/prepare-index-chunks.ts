import { type ChunkMarkdownOptions, chunkMarkdown } from "./chunk-markdown.js";
import { searchableText } from "./hybrid-score.js";
import { analyzeChunkText } from "./text-analysis.js";
import type { IndexChunk } from "./types.js";

/**
 * A memory file's chunks with their index terms and scoring lengths: the CPU half of indexing a file (token
 * counting, analysis), done alike on the main thread and in the index worker.
 */
export function prepareIndexChunks(
  relative: string,
  bytes: Uint8Array,
  chunking?: ChunkMarkdownOptions,
): IndexChunk[] {
  // Buffer's decoding, not TextDecoder's: a byte-order mark stays in the text, as it always has.
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  return chunkMarkdown(relative, text, chunking).map((chunk) => {
    const { terms, length } = analyzeChunkText(searchableText(chunk));
    return { ...chunk, terms, textLength: length };
  });
}
