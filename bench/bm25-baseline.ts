/**
 * A plain Okapi BM25 over the memory files: the baseline Almanac's default search has to beat
 * (bench/conversational-retrieval.ts). Line-aligned windows of about 400 words, k1 = 1.2, b = 0.75, Lucene's IDF
 * `ln(1 + (N − df + 0.5) / (df + 0.5))`, no stemming, English stop words (NLTK's list) removed.
 * Words: Latin/other scripts are runs of letters and digits, lower-cased; Han/Kana runs are cut into
 * `Intl.Segmenter("zh")` words (no character bigrams, no Chinese stop words). Not tuned on purpose.
 */
import { readFile } from "node:fs/promises";
import * as path from "node:path";

/** A chunk of a file that BM25 ranks. */
export interface Bm25Hit {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly score: number;
}

/** Options of {@link createBm25Baseline}. */
export interface Bm25Options {
  readonly k1?: number;
  readonly b?: number;
  /** Words per chunk: lines are added while the chunk stays at or under this (default 400). */
  readonly chunkWords?: number;
}

/** A BM25 index over a fixed set of files. */
export interface Bm25Baseline {
  search(query: string, limit: number): Bm25Hit[];
  readonly chunkCount: number;
}

const stopWords = new Set(
  `i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves what which who whom this that these those am is are
was were be been being have has had having do does did doing a an the and but if or because as until while of
at by for with about against between into through during before after above below to from up down in out on
off over under again further then once here there when where why how all any both each few more most other
some such no nor not only own same so than too very s t can will just don should now d ll m o re ve y ain
aren couldn didn doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn`.split(
    /\s+/u,
  ),
);

const cjk = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}";
// The `v` flag (set subtraction) is built at run time, as in the memory package's text analysis.
const tokenPattern = new RegExp(`([${cjk}]+)|([[\\p{L}\\p{N}]--[${cjk}]]+)`, "gv");
const segmenter = new Intl.Segmenter("zh", { granularity: "word" });

/** A line's words before stop-word removal (what "400-word chunks" counts): CJK runs count their segmenter words. */
function wordsOf(text: string, dropStopWords: boolean): string[] {
  const words: string[] = [];
  for (const [, han, other] of text.normalize("NFKC").toLowerCase().matchAll(tokenPattern)) {
    if (han !== undefined) {
      for (const segment of segmenter.segment(han)) if (segment.isWordLike) words.push(segment.segment);
    } else if (other !== undefined && !(dropStopWords && stopWords.has(other))) {
      words.push(other);
    }
  }
  return words;
}

/** The words BM25 counts, in order: lower-cased, stop words removed, CJK runs segmented into words. */
export function bm25Words(text: string): string[] {
  return wordsOf(text, true);
}

interface Chunk {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly frequencies: ReadonlyMap<string, number>;
  readonly length: number;
}

/** Cuts a file into windows of whole lines holding at most `chunkWords` words (a longer line is one chunk). */
function chunkFile(file: string, content: string, chunkWords: number): Chunk[] {
  const chunks: Chunk[] = [];
  let words: string[] = [];
  let startLine = 1;
  let count = 0;
  const lines = content.split(/\r?\n/u);
  const emit = (endLine: number) => {
    if (words.length > 0) {
      const frequencies = new Map<string, number>();
      for (const word of words) frequencies.set(word, (frequencies.get(word) ?? 0) + 1);
      chunks.push({ path: file, startLine, endLine, frequencies, length: words.length });
    }
    words = [];
    count = 0;
  };
  lines.forEach((line, index) => {
    const size = wordsOf(line, false).length;
    if (count > 0 && count + size > chunkWords) {
      emit(index);
      startLine = index + 1;
    }
    if (count === 0) startLine = index + 1;
    words.push(...bm25Words(line));
    count += size;
  });
  emit(lines.length);
  return chunks;
}

/** Indexes the given workspace-relative files (read from `workspace`) for BM25 search. */
export async function createBm25Baseline(
  workspace: string,
  files: readonly string[],
  options: Bm25Options = {},
): Promise<Bm25Baseline> {
  const k1 = options.k1 ?? 1.2;
  const b = options.b ?? 0.75;
  const chunkWords = options.chunkWords ?? 400;
  const chunks: Chunk[] = [];
  for (const file of files) {
    chunks.push(...chunkFile(file, await readFile(path.join(workspace, file), "utf8"), chunkWords));
  }
  const documentFrequency = new Map<string, number>();
  for (const chunk of chunks) {
    for (const word of chunk.frequencies.keys())
      documentFrequency.set(word, (documentFrequency.get(word) ?? 0) + 1);
  }
  const averageLength = chunks.reduce((sum, chunk) => sum + chunk.length, 0) / Math.max(1, chunks.length);
  const idf = (word: string) => {
    const df = documentFrequency.get(word) ?? 0;
    return Math.log(1 + (chunks.length - df + 0.5) / (df + 0.5));
  };

  return {
    chunkCount: chunks.length,
    search(query, limit) {
      const terms = [...new Set(bm25Words(query))].filter((term) => documentFrequency.has(term));
      const weights = terms.map(idf);
      const scored: Bm25Hit[] = [];
      for (const chunk of chunks) {
        let score = 0;
        const norm = k1 * (1 - b + (b * chunk.length) / averageLength);
        terms.forEach((term, index) => {
          const tf = chunk.frequencies.get(term);
          if (tf !== undefined) score += (weights[index]! * tf * (k1 + 1)) / (tf + norm);
        });
        if (score > 0)
          scored.push({ path: chunk.path, startLine: chunk.startLine, endLine: chunk.endLine, score });
      }
      // Ties keep file and line order, so results are stable.
      return scored.sort((x, y) => y.score - x.score).slice(0, limit);
    },
  };
}
