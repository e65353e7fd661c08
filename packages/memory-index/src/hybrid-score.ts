import { embeddingInput } from "./chunk-markdown.js";
import { memoizeFrozen } from "./frozen-memo.js";
import { lineAt, lineStartsOf } from "./line-starts.js";
import { dailyLogDate } from "./memory-source.js";
import type { TextOccurrences } from "./snippet.js";
import type { AnalyzedQuery, QueryConcept } from "./text-analysis.js";
import { isAscii, normalizeForMatching, termOffsets, textLength } from "./text-matching.js";
import type { BackendHit, SearchMode, StoredChunk, TermStatistics } from "./types.js";

/** Knobs of {@link scoreHits}; every one has a default (see docs/memory-search.md). */
export interface ScoringOptions {
  /** Share of the vector side in hybrid mode, the rest is text (default 0.6). */
  readonly vectorWeight?: number;
  /** Share of the score given to holding the query's rare identifiers (default 0.5). */
  readonly identifierWeight?: number;
  /** Largest recency gain, reached by a mid-scored note written today (default 0.2 → at most +0.05). */
  readonly recencyWeight?: number;
  /** Days after which a daily log's recency gain halves (default 30). */
  readonly recencyHalfLifeDays?: number;
  /** BM25 term-frequency saturation (default 1.2). */
  readonly k1?: number;
  /** BM25 length normalization, 0 (none) to 1 (full) (default 0.75). */
  readonly b?: number;
  /** Share of the text score given to the chunk's best line (default 0.7). */
  readonly lineWeight?: number;
}

/** A hit with its score and the evidence behind it. */
export interface ScoredHit {
  readonly chunk: StoredChunk;
  readonly score: number;
  /** IDF-weighted share of the query's concepts the chunk holds, in [0, 1]. */
  readonly coverage: number;
  /** Holds every concept of the query, or every identifier: never dropped by `minScore`. */
  readonly exact: boolean;
  /** Where scoring found the query's terms, for the snippet (ASCII chunks with every occurrence found). */
  readonly occurrences?: TextOccurrences;
}

const dayMs = 86_400_000;

/** What a chunk is searched by: its path, its heading path and its text (the same on both sides). */
export function searchableText(chunk: Pick<StoredChunk, "path" | "headings" | "text">): string {
  return `${chunk.path}\n${embeddingInput(chunk)}`;
}

/**
 * Length of a chunk's searchable text in words (CJK characters one each), for BM25's length normalization.
 * Backends may store it at indexing time (SQLite does): measuring it is a pass over each candidate's text,
 * the largest share of scoring. Changing what it counts needs a new index schema version.
 */
export function scoringLength(chunk: Pick<StoredChunk, "path" | "headings" | "text">): number {
  return textLength(normalizeForMatching(searchableText(chunk)));
}

/**
 * Recency as a mild, bounded boost: `s + w·d·s·(1 − s)` with `d` halving every half-life. The gain
 * is largest for mid scores (at most `w/4`), zero for irrelevant and perfect hits, and the result
 * stays increasing in `s`, so relevance decides the order and recency only separates near-ties.
 */
export function applyRecency(score: number, ageDays: number, weight: number, halfLifeDays: number): number {
  const decay = 0.5 ** (Math.max(0, ageDays) / halfLifeDays);
  return score + weight * decay * score * (1 - score);
}

function inverseDocumentFrequency(concept: QueryConcept, statistics: TermStatistics | undefined): number {
  if (statistics === undefined) return 1;
  let documents = 0;
  for (const term of concept.terms) documents = Math.max(documents, statistics.documents.get(term) ?? 0);
  const total = Math.max(statistics.total, documents);
  return Math.log(1 + (total - documents + 0.5) / (documents + 0.5));
}

/**
 * An identifier held by more than this share of chunks (the two speakers' names in a chat log) is
 * a word like any other: holding it says little about a chunk (measured with bench/conversational-retrieval.ts).
 */
const rareIdentifierShare = 0.1;
/** Term frequencies saturate (BM25); counting past this is waste. */
const frequencyLimit = 20;
/**
 * Maps relative BM25 `x` (1 = every concept once in a chunk of mean length) onto [0, 1) as
 * `1 − e^(−2x)`: 0.86 for that chunk, 0.39 for one concept in four, so the score floor keeps its meaning.
 */
const textSteepness = 2;

/** Occurrences looked at per term when finding the best line (a name on every line of a long chunk). */
const offsetLimit = 400;
/**
 * A query word that is the speaker of a dialogue line (`- Priya: …`) counts this much more on that line
 * than a mention ("…, Priya?"): a question about someone is mostly answered in their own words.
 */
const speakerFactor = 1.5;

/**
 * Whether the occurrence at `offset` is the speaker of a dialogue line (`- Priya: …`): the line starts with
 * `-` at most 3 characters before it and has a colon after it within its first 40 characters.
 */
export function isSpeakerAt(text: string, offset: number): boolean {
  let start = offset;
  while (start > 0 && text.charCodeAt(start - 1) !== 10) {
    if (offset - start === 3) return false;
    start -= 1;
  }
  if (text.charCodeAt(start) !== 45) return false;
  const limit = Math.min(text.length, start + 40);
  for (let index = start; index < limit; index += 1) {
    const code = text.charCodeAt(index);
    if (code === 10) return false;
    if (code === 58 || code === 0xff1a) return offset < index;
  }
  return false;
}

/** What scoring derives from a chunk alone, whatever the query. */
interface CandidateText {
  /** The normalised searchable text (see {@link searchableText}). */
  readonly text: string;
  /** Where the normalised chunk text starts in `text`. */
  readonly start: number;
  /** Where each line of `text` starts. */
  readonly lineStarts: readonly number[];
  /** Where each line of the chunk's text starts, counted from `start`. */
  readonly chunkLineStarts: readonly number[];
  /** The chunk's scoring length (stored by the backend or measured). */
  readonly length: number;
  /** {@link dailyLogDate} of its path. */
  readonly date: number | undefined;
}

/**
 * {@link CandidateText} of a chunk, once per frozen chunk object (see {@link memoizeFrozen}).
 */
const candidateText = memoizeFrozen((chunk: StoredChunk): CandidateText => {
  const searchable = searchableText(chunk);
  const ascii = isAscii(searchable);
  const text = ascii ? searchable.toLowerCase() : normalizeForMatching(searchable);
  // The chunk's text ends the searchable text, after a newline (which normalising never reaches across).
  const prefix = searchable.length - chunk.text.length;
  const start = ascii ? prefix : normalizeForMatching(searchable.slice(0, prefix)).length;
  const lineStarts = lineStartsOf(text);
  return {
    text,
    start,
    lineStarts,
    chunkLineStarts: lineStarts.slice(lineAt(lineStarts, start)).map((lineStart) => lineStart - start),
    length: chunk.textLength ?? textLength(text),
    date: dailyLogDate(chunk.path),
  };
});

/** Per line, the weight of each concept it holds (line-major); reused by every call, grown when short. */
let held = new Float64Array(1024);

/**
 * The IDF weight of the query concepts found together on the chunk's best line. A chunk whose one line
 * holds the speaker's name and the topic beats a chunk dense with the name alone, which whole-chunk
 * BM25 cannot tell apart (bench/conversational-retrieval.ts: ±1 line around it measured worse).
 */
function bestLine(
  text: string,
  lineStarts: readonly number[],
  offsets: readonly (readonly (readonly number[])[])[],
  weights: readonly number[],
): number {
  const conceptCount = offsets.length;
  if (conceptCount === 1) {
    // One concept: its best line is its heaviest occurrence, no lines needed.
    let best = 0;
    for (const found of offsets[0]!) {
      for (const offset of found) {
        const weight = weights[0]! * (isSpeakerAt(text, offset) ? speakerFactor : 1);
        if (weight > best) best = weight;
      }
    }
    return best;
  }
  const slots = lineStarts.length * conceptCount;
  if (held.length < slots) held = new Float64Array(Math.max(slots, held.length * 2));
  held.fill(0, 0, slots);
  for (let concept = 0; concept < conceptCount; concept += 1) {
    for (const found of offsets[concept]!) {
      for (const offset of found) {
        const line = lineAt(lineStarts, offset);
        const weight = weights[concept]! * (isSpeakerAt(text, offset) ? speakerFactor : 1);
        const slot = line * conceptCount + concept;
        if (weight > held[slot]!) held[slot] = weight;
      }
    }
  }
  let best = 0;
  for (let line = 0; line < lineStarts.length; line += 1) {
    let sum = 0;
    for (let concept = 0; concept < conceptCount; concept += 1) sum += held[line * conceptCount + concept]!;
    if (sum > best) best = sum;
  }
  return best;
}

function isRare(concept: QueryConcept, statistics: TermStatistics | undefined): boolean {
  if (statistics === undefined) return true;
  let documents = 0;
  for (const term of concept.terms) documents = Math.max(documents, statistics.documents.get(term) ?? 0);
  return documents <= Math.max(1, statistics.total * rareIdentifierShare);
}

/** Context of one scoring pass. */
export interface ScoringContext {
  readonly mode: SearchMode;
  /** Document frequencies, when the backend has them; uniform weights otherwise. */
  readonly statistics?: TermStatistics;
  /** Current time (ms), for the recency boost. */
  readonly now: number;
  readonly options?: ScoringOptions;
}

/**
 * Scores candidates from both sides on one scale in [0, 1] and sorts them, best first.
 * Text relevance is BM25-shaped (saturated term frequency, length normalization against the
 * candidates' mean) over the query's own IDF weight, so it counts how well a chunk holds each concept,
 * not just whether, on an absolute scale. Hybrid mode mixes it with cosine similarity; chunks not
 * embedded yet are scored on text alone. Chunks holding the query's rare identifiers get a share of
 * the score that others cannot reach, then recency nudges daily logs.
 */
export function scoreHits(
  query: AnalyzedQuery,
  hits: readonly BackendHit[],
  context: ScoringContext,
): ScoredHit[] {
  const vectorWeight = context.options?.vectorWeight ?? 0.6;
  const identifierWeight = context.options?.identifierWeight ?? 0.5;
  const recencyWeight = context.options?.recencyWeight ?? 0.2;
  const halfLifeDays = context.options?.recencyHalfLifeDays ?? 30;
  const k1 = context.options?.k1 ?? 1.2;
  const b = context.options?.b ?? 0.75;
  const meaningful = query.concepts.filter((concept) => !concept.stopWord);
  const concepts = meaningful.length > 0 ? meaningful : query.concepts;
  const weights = concepts.map((concept) => inverseDocumentFrequency(concept, context.statistics));
  const totalWeight = weights.reduce((sum, weight) => sum + weight, 0);
  const identifiers = concepts.flatMap((concept, index) =>
    concept.identifier && isRare(concept, context.statistics) ? [index] : [],
  );

  const lineWeight = context.options?.lineWeight ?? 0.7;
  // Plain loops over the candidates: this runs for every candidate of every query.
  const count = hits.length;
  const frequencies = new Float64Array(count * concepts.length);
  const lines = new Float64Array(count);
  const lengths = new Float64Array(count);
  const dates: (number | undefined)[] = [];
  const occurrences: (TextOccurrences | undefined)[] = [];
  let lengthSum = 0;
  for (let at = 0; at < count; at += 1) {
    const derived = candidateText(hits[at]!.chunk);
    const text = derived.text;
    let complete = true;
    const offsets: number[][][] = [];
    for (let concept = 0; concept < concepts.length; concept += 1) {
      const perTerm: number[][] = [];
      let most = 0;
      for (const term of concepts[concept]!.terms) {
        const found = termOffsets(text, term, offsetLimit);
        perTerm.push(found);
        if (found.length > most) most = found.length;
        if (found.length >= offsetLimit) complete = false;
      }
      offsets.push(perTerm);
      frequencies[at * concepts.length + concept] = Math.min(frequencyLimit, most);
    }
    occurrences.push(
      complete ? { text, offsets, start: derived.start, lineStarts: derived.chunkLineStarts } : undefined,
    );
    lines[at] = lineWeight > 0 ? bestLine(text, derived.lineStarts, offsets, weights) : 0;
    lengths[at] = derived.length;
    dates.push(derived.date);
    lengthSum += lengths[at]!;
  }
  // Length is judged against the candidates' mean: chunks are bounded by the chunker, so it is stable.
  const averageLength = Math.max(1, lengthSum / Math.max(1, count));
  const bases = new Float64Array(count);
  const coverages = new Float64Array(count);
  const identifierShares = new Float64Array(count);
  let useIdentifiers = false;
  for (let at = 0; at < count; at += 1) {
    const hit = hits[at]!;
    let covered = 0;
    let saturated = 0;
    const lengthNorm = k1 * (1 - b + (b * lengths[at]!) / averageLength);
    let identifiersHeld = 0;
    for (let index = 0; index < concepts.length; index += 1) {
      const frequency = frequencies[at * concepts.length + index]!;
      if (frequency === 0) continue;
      covered += weights[index]!;
      saturated += (weights[index]! * frequency * (k1 + 1)) / (frequency + lengthNorm);
    }
    for (const index of identifiers) if (frequencies[at * concepts.length + index]! > 0) identifiersHeld += 1;
    coverages[at] = totalWeight > 0 ? covered / totalWeight : 0;
    // BM25 over the query's own weight: 1 when every concept appears once in a chunk of mean length.
    const relative = totalWeight > 0 ? saturated / totalWeight : 0;
    const chunkScore = 1 - Math.exp(-textSteepness * relative);
    const lineScore = totalWeight > 0 ? lines[at]! / totalWeight : 0;
    const textScore = (1 - lineWeight) * chunkScore + lineWeight * lineScore;
    identifierShares[at] = identifiers.length === 0 ? 0 : identifiersHeld / identifiers.length;
    if (identifierShares[at]! > 0) useIdentifiers = true;
    bases[at] =
      context.mode === "hybrid" && hit.vectorSimilarity !== undefined
        ? vectorWeight * Math.max(0, hit.vectorSimilarity) + (1 - vectorWeight) * textScore
        : textScore;
  }

  const entries: { hit: ScoredHit; recency: number }[] = [];
  for (let at = 0; at < count; at += 1) {
    const chunk = hits[at]!.chunk;
    const base = bases[at]!;
    const identifierShare = identifierShares[at]!;
    const coverage = coverages[at]!;
    let score = useIdentifiers ? (1 - identifierWeight) * base + identifierWeight * identifierShare : base;
    const date = dates[at];
    if (date !== undefined && recencyWeight > 0) {
      score = applyRecency(score, (context.now - date) / dayMs, recencyWeight, halfLifeDays);
    }
    const exact = coverage >= 0.999 || (identifiers.length > 0 && identifierShare === 1);
    entries.push({
      hit: { chunk, score: Math.min(1, Math.max(0, score)), coverage, exact, occurrences: occurrences[at] },
      recency: date ?? chunk.updatedAt,
    });
  }
  // Exact ties (the boost is zero for a perfect score) go to the newer note.
  entries.sort(
    (a, b) =>
      b.hit.score - a.hit.score ||
      b.recency - a.recency ||
      a.hit.chunk.path.localeCompare(b.hit.chunk.path) ||
      a.hit.chunk.startLine - b.hit.chunk.startLine,
  );
  return entries.map((entry) => entry.hit);
}
