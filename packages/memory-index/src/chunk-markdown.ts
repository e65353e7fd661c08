import { hash } from "node:crypto";
import { createTokenCounter } from "@almanac/tokenizer";
import type { MemoryChunk } from "./types.js";

/** Options of {@link chunkMarkdown}. */
export interface ChunkMarkdownOptions {
  /**
   * Largest chunk, in tokens (default 600: a dialogue session or two; 400 lost answers a line beside
   * the chunk in bench/conversational-retrieval.ts).
   */
  readonly maxTokens?: number;
  /** Tokens of whole lines repeated at the start of the next chunk when a section is cut (default 80). */
  readonly overlapTokens?: number;
  /** Token counter (default core's `o200k_base` counter). */
  readonly countTokens?: (text: string) => number;
}

/** A line, or a piece of a line too long for one chunk. */
interface Unit {
  readonly line: number;
  readonly text: string;
  readonly tokens: number;
  readonly isHeading: boolean;
  /** Heading path in effect at this line (the heading itself included when the line is one). */
  readonly headings: readonly string[];
  /** Continues the previous unit's line (a long line cut in pieces). */
  readonly continuesLine: boolean;
}

const headingPattern = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/u;
const fencePattern = /^ {0,3}(`{3,}|~{3,})/u;
/** Below this share of `maxTokens` a heading does not start a new chunk (a title alone is not worth one). */
const minSectionShare = 1 / 8;

let defaultCounter: ((text: string) => number) | undefined;

function defaultCountTokens(text: string): number {
  defaultCounter ??= createTokenCounter().countText;
  return defaultCounter(text);
}

/**
 * SHA-256 of a string, hex. The one-shot `crypto.hash` (Node 20.12+) instead of a Hash object: indexing hashes
 * every file and every chunk, and the object's JavaScript side was most of the cost of a 2 KB chunk's hash.
 */
export function sha256(text: string | Uint8Array): string {
  return hash("sha256", text, "hex");
}

/** What is embedded (and hashed) for a chunk: its heading path as context, then its text. */
export function embeddingInput(chunk: {
  readonly headings: readonly string[];
  readonly text: string;
}): string {
  return chunk.headings.length === 0 ? chunk.text : `${chunk.headings.join(" › ")}\n\n${chunk.text}`;
}

/** Cuts a line longer than `maxTokens` into pieces, preferring to cut at a space. */
function splitLongLine(
  text: string,
  tokens: number,
  maxTokens: number,
  count: (text: string) => number,
): string[] {
  const pieces: string[] = [];
  let rest = text;
  let restTokens = tokens;
  while (restTokens > maxTokens) {
    let size = Math.max(1, Math.floor((rest.length * maxTokens) / restTokens));
    let piece = rest.slice(0, size);
    while (size > 1 && count(piece) > maxTokens) {
      size = Math.max(1, Math.floor(size * 0.9));
      piece = rest.slice(0, size);
    }
    const space = piece.lastIndexOf(" ");
    if (space > size / 2) size = space + 1;
    // Never cut a surrogate pair in half.
    const code = rest.charCodeAt(size - 1);
    if (code >= 0xd800 && code <= 0xdbff && size > 1) size -= 1;
    pieces.push(rest.slice(0, size));
    rest = rest.slice(size);
    restTokens = count(rest);
  }
  if (rest !== "") pieces.push(rest);
  return pieces;
}

function toUnits(content: string, maxTokens: number, count: (text: string) => number): Unit[] {
  const lines = content.split(/\r?\n/u);
  if (lines.at(-1) === "") lines.pop();
  const units: Unit[] = [];
  let headings: readonly string[] = [];
  let fence: string | undefined;
  lines.forEach((text, index) => {
    const fenceMatch = fencePattern.exec(text);
    if (fenceMatch !== null) {
      const marker = fenceMatch[1]!;
      if (fence === undefined) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
    }
    const heading = fence === undefined && fenceMatch === null ? headingPattern.exec(text) : null;
    if (heading !== null) {
      const level = heading[1]!.length;
      headings = [...headings.slice(0, level - 1), heading[2]!.trim()];
    }
    const tokens = count(text) + 1; // +1 for the newline
    const pieces = tokens - 1 > maxTokens ? splitLongLine(text, tokens - 1, maxTokens, count) : [text];
    pieces.forEach((piece, pieceIndex) => {
      units.push({
        line: index + 1,
        text: piece,
        tokens: pieces.length === 1 ? tokens : count(piece),
        isHeading: heading !== null && pieceIndex === 0,
        headings,
        continuesLine: pieceIndex > 0,
      });
    });
  });
  return units;
}

function joinUnits(units: readonly Unit[]): string {
  let text = "";
  units.forEach((unit, index) => {
    text += index > 0 && !unit.continuesLine ? `\n${unit.text}` : unit.text;
  });
  return text;
}

function positiveInteger(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0)
    throw new RangeError(`chunkMarkdown: ${name} must be a whole number ≥ 0`);
  return value;
}

/**
 * Cuts a Markdown file into chunks of about `maxTokens` on whole lines, following its structure:
 * a heading starts a new chunk, each chunk carries the heading path in effect, and a section
 * longer than one chunk is cut with `overlapTokens` of whole lines repeated. Lines longer than a
 * chunk are cut in pieces. Blank-only chunks are dropped.
 */
export function chunkMarkdown(
  path: string,
  content: string,
  options: ChunkMarkdownOptions = {},
): MemoryChunk[] {
  const maxTokens = Math.max(1, positiveInteger(options.maxTokens, 600, "maxTokens"));
  const overlapTokens = Math.min(positiveInteger(options.overlapTokens, 80, "overlapTokens"), maxTokens / 2);
  const count = options.countTokens ?? defaultCountTokens;
  const units = toUnits(content, maxTokens, count);
  const chunks: MemoryChunk[] = [];

  const emit = (units: readonly Unit[]): void => {
    // Blank lines at the edges are left out, so adding or removing one does not change a chunk's hash.
    let start = 0;
    let end = units.length;
    while (start < end && units[start]!.text.trim() === "") start += 1;
    while (end > start && units[end - 1]!.text.trim() === "") end -= 1;
    const group = units.slice(start, end);
    const first = group[0];
    const last = group.at(-1);
    if (first === undefined || last === undefined) return;
    const text = joinUnits(group);
    const headings = first.isHeading ? first.headings.slice(0, -1) : first.headings;
    const hash = sha256(embeddingInput({ headings, text }));
    chunks.push({
      id: `${path}:${first.line}-${last.line}:${hash.slice(0, 16)}`,
      path,
      startLine: first.line,
      endLine: last.line,
      headings,
      text,
      hash,
      tokens: group.reduce((sum, unit) => sum + unit.tokens, 0),
    });
  };

  let current: Unit[] = [];
  let currentTokens = 0;
  for (const unit of units) {
    if (unit.isHeading && currentTokens >= maxTokens * minSectionShare) {
      emit(current);
      current = [];
      currentTokens = 0;
    } else if (currentTokens + unit.tokens > maxTokens && current.length > 0) {
      emit(current);
      // Carry whole trailing lines, never the chunk's first non-blank one, so every chunk moves forward.
      const firstContent = Math.max(
        0,
        current.findIndex((kept) => kept.text.trim() !== ""),
      );
      let carried = 0;
      let start = current.length;
      while (start > firstContent + 1 && carried + current[start - 1]!.tokens <= overlapTokens) {
        start -= 1;
        carried += current[start]!.tokens;
      }
      while (start < current.length && current[start]!.continuesLine) start += 1;
      current = current.slice(start);
      currentTokens = carried;
      if (currentTokens + unit.tokens > maxTokens) {
        current = [];
        currentTokens = 0;
      } else {
        currentTokens = current.reduce((sum, kept) => sum + kept.tokens, 0);
      }
    }
    current.push(unit);
    currentTokens += unit.tokens;
  }
  emit(current);
  return chunks;
}
