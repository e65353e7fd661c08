import { memoizeFrozen } from "./frozen-memo.js";
import { lineAt, lineStartsOf } from "./line-starts.js";
import type { AnalyzedQuery, QueryConcept } from "./text-analysis.js";
import { normalizeCandidateText, termOffsets } from "./text-matching.js";
import type { TermStatistics } from "./types.js";

/** What a search hit shows: a window of whole lines and the file lines it spans (1-based, inclusive). */
export interface Snippet {
  readonly text: string;
  readonly startLine: number;
  readonly endLine: number;
}

/** A chunk as the snippet needs it: its text (lines of the file from `startLine` on). */
export interface SnippetSource {
  readonly text: string;
  readonly startLine: number;
}

/**
 * Where scoring found the query's terms in a chunk: `text` is its normalised searchable text (see
 * `searchableText`), whose normalised chunk text starts at `start`; `offsets` holds, per concept it scored
 * (the query's non-stop-word concepts, or all when there are none) and per term, every offset of the term
 * in `text`. Saves the snippet normalising and scanning the chunk again.
 */
export interface TextOccurrences {
  readonly text: string;
  readonly start: number;
  /** Where each line of the chunk's text starts in `text`, counted from `start` (found when absent). */
  readonly lineStarts?: readonly number[];
  readonly offsets: readonly (readonly (readonly number[])[])[];
}

/** Inverse document frequency as BM25 counts it (never negative). */
function inverseDocumentFrequency(concept: QueryConcept, statistics: TermStatistics | undefined): number {
  if (statistics === undefined || statistics.total === 0) return 1;
  // A concept matches through any of its alternatives: the rarest one it could be found by decides.
  let documents = statistics.total;
  for (const term of concept.terms) documents = Math.min(documents, statistics.documents.get(term) ?? 0);
  return Math.log(1 + (statistics.total - documents + 0.5) / (documents + 0.5));
}

/**
 * The lines (0-based, in order) of `normalized` (see `normalizeForMatching`) that hold any of `terms`: what
 * `containsTerm` says line by line, found with one scan of the whole text per term.
 */
export function linesHolding(normalized: string, terms: readonly string[]): number[] {
  return holdingLines(normalized, lineStartsOf(normalized), terms);
}

/** {@link linesHolding} with the text's line starts already found. */
function holdingLines(normalized: string, lineStarts: readonly number[], terms: readonly string[]): number[] {
  return linesOfOffsets(
    lineStarts,
    terms.map((term) => termOffsets(normalized, term)),
    0,
  );
}

/** The lines (0-based, in order) holding any of `offsets`, each moved back by `shift` (none before it). */
function linesOfOffsets(
  lineStarts: readonly number[],
  offsets: readonly (readonly number[])[],
  shift: number,
): number[] {
  const held = new Uint8Array(lineStarts.length);
  for (const found of offsets) {
    for (const at of found) {
      const offset = at - shift;
      if (offset < 0) continue;
      held[lineAt(lineStarts, offset)] = 1;
    }
  }
  const holding: number[] = [];
  for (let line = 0; line < held.length; line += 1) if (held[line] === 1) holding.push(line);
  return holding;
}

/**
 * Weight of each line of `text` (split into `lines`): the query concepts it holds, each weighted by how rare
 * it is in the index (IDF), how rare it is among the chunk's own lines (a speaker's name on every line says
 * nothing about which line answers), and doubled for identifiers; and per line the first term of its heaviest
 * concept. Function words count only when the query has nothing else.
 */
function lineWeights(
  text: string,
  lines: readonly string[],
  query: AnalyzedQuery,
  statistics: TermStatistics | undefined,
  occurrences: TextOccurrences | undefined,
): { weights: Float64Array; bestTerms: (string | undefined)[] } {
  // Normalised whole, not line by line: NFKC and lower-casing never make, remove or reach across a newline.
  const normalized = occurrences === undefined ? normalizeCandidateText(text) : undefined;
  let lineStarts: readonly number[];
  if (occurrences === undefined) {
    lineStarts = lineStartsOf(normalized!);
  } else if (occurrences.lineStarts !== undefined) {
    lineStarts = occurrences.lineStarts;
  } else {
    const { text: searchable, start } = occurrences;
    const found = [0];
    for (let at = searchable.indexOf("\n", start); at !== -1; at = searchable.indexOf("\n", at + 1))
      found.push(at + 1 - start);
    lineStarts = found;
  }
  const content = query.concepts.filter((concept) => !concept.stopWord);
  const concepts = content.length > 0 ? content : query.concepts;
  const weights = new Float64Array(lines.length);
  const bestWeights = new Float64Array(lines.length);
  const bestTerms: (string | undefined)[] = new Array(lines.length).fill(undefined);
  let nonBlank = 0;
  for (let index = 0; index < concepts.length; index += 1) {
    const concept = concepts[index]!;
    const holding =
      occurrences === undefined
        ? holdingLines(normalized!, lineStarts, concept.terms)
        : linesOfOffsets(lineStarts, occurrences.offsets[index]!, occurrences.start);
    if (holding.length === 0) continue;
    if (nonBlank === 0) {
      for (const line of lines) if (line.trim() !== "") nonBlank += 1;
      nonBlank = Math.max(1, nonBlank);
    }
    const weight =
      inverseDocumentFrequency(concept, statistics) *
      (1 + Math.log(nonBlank / holding.length)) *
      (concept.identifier ? 2 : 1);
    for (const line of holding) {
      weights[line]! += weight;
      if (weight > bestWeights[line]!) {
        bestWeights[line] = weight;
        bestTerms[line] = concept.terms[0];
      }
    }
  }
  return { weights, bestTerms };
}

/** A chunk's text as lines, with its first and last non-blank line and the length from one to the other. */
interface ChunkLines {
  readonly lines: readonly string[];
  readonly first: number;
  readonly last: number;
  readonly wholeLength: number;
}

/** {@link ChunkLines} of a chunk, once per frozen chunk object (see {@link memoizeFrozen}). */
const chunkLines = memoizeFrozen((chunk: SnippetSource): ChunkLines => {
  const lines = chunk.text.split("\n");
  let first = 0;
  let last = lines.length - 1;
  while (first < last && lines[first]!.trim() === "") first += 1;
  while (last > first && lines[last]!.trim() === "") last -= 1;
  let wholeLength = last - first;
  for (let index = first; index <= last; index += 1) wholeLength += lines[index]!.length;
  return { lines, first, last, wholeLength };
});

/** Cuts one over-long line to `maxChars` code points around `term` (never inside a surrogate pair). */
function cutLine(line: string, term: string | undefined, maxChars: number): string {
  const points = Array.from(line);
  const at = term === undefined ? -1 : normalizeCandidateText(line).indexOf(term);
  // Position in code points of the match (normalisation may shift it slightly; close is good enough).
  const matchPoint = at <= 0 ? 0 : Array.from(line.slice(0, at)).length;
  const start = Math.max(0, Math.min(points.length - maxChars, matchPoint - Math.floor(maxChars / 3)));
  const body = points
    .slice(start, start + maxChars)
    .join("")
    .trim();
  return `${start > 0 ? "…" : ""}${body}${start + maxChars < points.length ? "…" : ""}`;
}

/**
 * The part of a chunk to show for a query: the whole chunk when it fits in `maxChars`, otherwise the window
 * of whole lines that holds the best-matching line (rare terms and identifiers first) and grows towards the
 * neighbouring lines that match most, while it fits. The returned line range is the window's, so reading
 * those lines (`memory_get`) gives exactly what the hit showed.
 */
export function makeSnippet(
  chunk: SnippetSource,
  query: AnalyzedQuery,
  maxChars: number,
  statistics?: TermStatistics,
  occurrences?: TextOccurrences,
): Snippet {
  const { lines, first, last, wholeLength } = chunkLines(chunk);
  if (wholeLength <= maxChars) {
    const whole = lines.slice(first, last + 1).join("\n");
    return { text: whole, startLine: chunk.startLine + first, endLine: chunk.startLine + last };
  }
  const { weights, bestTerms } = lineWeights(chunk.text, lines, query, statistics, occurrences);
  let anchor = first;
  for (let index = first; index <= last; index += 1) if (weights[index]! > weights[anchor]!) anchor = index;
  let start = anchor;
  let end = anchor;
  let length = lines[anchor]!.length;
  // Grow towards the side whose next line matches more (forwards on a tie: what follows usually explains).
  for (;;) {
    const canBefore = start - 1 >= first && length + 1 + lines[start - 1]!.length <= maxChars;
    const canAfter = end + 1 <= last && length + 1 + lines[end + 1]!.length <= maxChars;
    if (!canBefore && !canAfter) break;
    if (canAfter && (!canBefore || weights[end + 1]! >= weights[start - 1]!)) {
      end += 1;
      length += 1 + lines[end]!.length;
    } else {
      start -= 1;
      length += 1 + lines[start]!.length;
    }
  }
  const body =
    start === end && lines[anchor]!.length > maxChars
      ? cutLine(lines[anchor]!, bestTerms[anchor], maxChars)
      : lines.slice(start, end + 1).join("\n");
  return {
    text: `${start > first ? "…\n" : ""}${body}${end < last ? "\n…" : ""}`,
    startLine: chunk.startLine + start,
    endLine: chunk.startLine + end,
  };
}
