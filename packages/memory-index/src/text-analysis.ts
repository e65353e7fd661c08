import { cjkClass, latinWord, spacelessClass } from "./script-classes.js";
import { isStopWord } from "./stop-words.js";
import { textLength } from "./text-matching.js";

// Text analysis shared by every backend, on the index side and the query side alike.
//
// - Everything is NFKC-normalised (full-width letters and digits become ASCII) and lower-cased.
// - Han, Hiragana and Katakana runs are indexed three ways: single characters, overlapping
//   character bigrams and the words `Intl.Segmenter` finds (three characters or more; shorter
//   words are already a unigram or a bigram). Bigrams make a two-character query such as 项目
//   match whatever the segmenter decided for the note (数据库 may come out as 数据|库 in one
//   sentence and 数据库 in another); unigrams make one-character queries work.
// - Thai, Lao, Khmer and Myanmar (no spaces either) are segmented with `Intl.Segmenter`.
// - Everything else is cut into words with a Unicode-aware expression equivalent to the
//   segmenter's word rule for space-separated scripts. It runs about fifty times faster than
//   `Intl.Segmenter` on English, which matters when 100k chunks are indexed.
// - Identifiers (`OPS-4821`, `deploy.sh`, URLs, e-mail addresses) are kept whole as well as
//   split into their words, so `OPS-4821` and `4821` both find the note.
// - English plurals and possessives get a light stem (`policies` → `policy`, `Priya's` → `priya`),
//   indexed next to the word itself.
//
// Terms are stored pre-analysed in FTS5 (see sqlite-index.ts) with a tokenizer that only splits
// on spaces, so the database never re-interprets them; Qdrant gets the same terms as hashed
// sparse-vector dimensions.

const wordCharacter = `[[\\p{L}\\p{N}\\p{M}]--[${cjkClass}${spacelessClass}]]`;
const word = `${wordCharacter}+(?:['’]${wordCharacter}+)*`;

/** Characters that join words into one identifier (`OPS-4821`, `a.b/c?d=e`); FTS5 must treat them as token characters. */
export const IDENTIFIER_JOINERS = "-_./:@#+~%&=?";
const joiner = "[\\-_.\\/:@#+~%&=?]";

// The `v` flag (set subtraction) is built at run time: TypeScript only accepts it in literals from ES2024.
const tokenPattern = new RegExp(
  `([${cjkClass}]+)|([${spacelessClass}]+)|(${word}(?:${joiner}+${word})*)`,
  "gv",
);
const wordPattern = new RegExp(word, "gv");
const segmentBoundaryPattern = /[/:@?#=&]+/u;
const extension = /^(.+)\.[a-z][a-z0-9]{0,4}$/u;
const apostrophes = /['’]/gu;
const possessive = /['’]s$/u;
const hasLetter = /\p{L}/u;
const hasDigit = /\p{N}/u;
const digitsOnly = /^\p{N}+$/u;
const capitalised = /^\p{Lu}/u;
const allCapitals = /^\p{Lu}{2,}$/u;

let segmenter: Intl.Segmenter | undefined;

function segmentWords(run: string): string[] {
  segmenter ??= new Intl.Segmenter("zh", { granularity: "word" });
  const words: string[] = [];
  for (const segment of segmenter.segment(run)) if (segment.isWordLike) words.push(segment.segment);
  return words;
}

/**
 * A light English stemmer for plurals (after Lucene's minimal English stemmer): `policies` →
 * `policy`, `notes` → `note`; words ending in `ss` or `us` are left alone. Only ASCII words of
 * four letters or more, so identifiers and other languages are never touched.
 */
export function stemEnglish(term: string): string {
  // Cheap checks first: this runs for every word of every chunk.
  if (term.length < 4 || term.charCodeAt(term.length - 1) !== 115 || !latinWord.test(term)) return term;
  if (term.endsWith("ies") && !term.endsWith("eies") && !term.endsWith("aies"))
    return `${term.slice(0, -3)}y`;
  if (term.endsWith("es") && !/[aeo]es$/u.test(term)) return term.slice(0, -1);
  if (term.endsWith("s") && !term.endsWith("ss") && !term.endsWith("us")) return term.slice(0, -1);
  return term;
}

/** A word as indexed: lower-cased, possessive `'s` dropped, other apostrophes removed (`don't` → `dont`). */
function normalizeWord(raw: string): string {
  const lower = raw.toLowerCase();
  if (!lower.includes("'") && !lower.includes("’")) return lower;
  return lower.replace(possessive, "").replace(apostrophes, "");
}

function hasJoiner(token: string): boolean {
  for (let index = 0; index < token.length; index += 1) {
    if (IDENTIFIER_JOINERS.includes(token[index]!)) return true;
  }
  return false;
}

function pushWord(terms: string[], raw: string): void {
  const term = normalizeWord(raw);
  if (term === "") return;
  terms.push(term);
  const stem = stemEnglish(term);
  if (stem !== term) terms.push(stem);
}

/**
 * The whole identifier, its path-like segments that are identifiers themselves (`example.com` in
 * a URL, `2025-03-01.md` in a path) and file names without their extension (`2025-03-01`).
 */
function identifierTerms(raw: string): string[] {
  const whole = raw.toLowerCase().replace(apostrophes, "");
  const terms = [whole];
  const parts = segmentBoundaryPattern.test(whole) ? whole.split(segmentBoundaryPattern) : [whole];
  for (const part of parts) {
    if (part !== whole && hasJoiner(part)) terms.push(part);
    const base = extension.exec(part)?.[1];
    if (base !== undefined && hasJoiner(base)) terms.push(base);
  }
  return terms;
}

function pushCjk(terms: string[], run: string): void {
  const characters = [...run];
  for (let index = 0; index < characters.length; index += 1) {
    const current = characters[index]!;
    terms.push(current);
    const next = characters[index + 1];
    if (next !== undefined) terms.push(current + next);
  }
}

/** Segmenter words of three characters or more, from all runs at once (one call: per-call overhead dominates). */
function pushLongCjkWords(terms: string[], runs: readonly string[]): void {
  if (runs.length === 0) return;
  for (const segmented of segmentWords(runs.join("\n")))
    if ([...segmented].length >= 3) terms.push(segmented);
}

/** Options of {@link analyzeText}. */
export interface AnalyzeOptions {
  /**
   * Add `Intl.Segmenter` words of three or more CJK characters (default true). Scoring turns it
   * off: coverage only needs unigrams and bigrams, and the segmenter is the slow part.
   */
  readonly segmentCjk?: boolean;
}

/** Index terms of a text, in order, with repeats (term frequency counts in BM25). */
export function analyzeText(text: string, options: AnalyzeOptions = {}): string[] {
  return analyze(text, options.segmentCjk ?? true, undefined);
}

/**
 * {@link analyzeText}'s terms and the text's length as scoring counts it (`textLength` of the normalised text),
 * in the same pass: the indexer stores both, and counting words separately was a fifth of the SQLite write.
 */
export function analyzeChunkText(text: string): { readonly terms: string[]; readonly length: number } {
  const length = { words: 0 };
  const terms = analyze(text, true, length);
  return { terms, length: length.words };
}

/** Counted words, when the caller wants the length too. */
interface WordCount {
  words: number;
}

function analyze(text: string, withWords: boolean, count: WordCount | undefined): string[] {
  const terms: string[] = [];
  const longRuns: string[] = [];
  // ASCII stretches are scanned by character code; a stretch holding any other character (from the
  // whitespace before it to the whitespace after it) goes through the token pattern. Cutting only at
  // ASCII whitespace keeps the result identical to the pattern on the whole text: no token spans it,
  // NFKC composes nothing with it and it ends the final-sigma context of `toLowerCase`. Nor does a word
  // of `textLength` span it, so the lengths of the stretches add up to the whole's.
  const end = text.length;
  let start = 0;
  while (start < end) {
    nonAscii.lastIndex = start;
    const found = nonAscii.exec(text);
    if (found === null) {
      analyzeAscii(text, start, end, terms, count);
      break;
    }
    let from = found.index;
    while (from > start && !isAsciiSpace(text.charCodeAt(from - 1))) from -= 1;
    if (from > start) analyzeAscii(text, start, from, terms, count);
    // The stretch for the pattern ends at a whitespace at least `asciiResume` characters before the next
    // non-ASCII character: short ASCII gaps between Chinese phrases are not worth a switch.
    let to = found.index + 1;
    for (;;) {
      while (to < end && !isAsciiSpace(text.charCodeAt(to))) to += 1;
      if (to >= end) break;
      nonAscii.lastIndex = to;
      const next = nonAscii.exec(text);
      if (next === null || next.index - to >= asciiResume) break;
      to = next.index + 1;
    }
    analyzeByPattern(text.slice(from, to), terms, longRuns, withWords, count);
    start = to;
  }
  if (withWords) pushLongCjkWords(terms, longRuns);
  return terms;
}

/**
 * {@link analyzeText} through the token pattern alone, with no ASCII fast path: the reference the fast
 * path is tested against.
 */
export function analyzeTextByPattern(text: string, options: AnalyzeOptions = {}): string[] {
  const withWords = options.segmentCjk ?? true;
  const terms: string[] = [];
  const longRuns: string[] = [];
  analyzeByPattern(text, terms, longRuns, withWords, undefined);
  if (withWords) pushLongCjkWords(terms, longRuns);
  return terms;
}

// No `u` flag: any UTF-16 unit above 0x7f (surrogates included) is found faster than by code point.
const nonAscii = /[\u0080-\uffff]/g;
/** ASCII characters between two non-ASCII stretches below which both go through the pattern as one. */
const asciiResume = 24;

/** Space, tab, line feed, carriage return: never in a token, never composed with, not case-ignorable. */
function isAsciiSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 9 || code === 13;
}

function analyzeByPattern(
  text: string,
  terms: string[],
  longRuns: string[],
  withWords: boolean,
  count: WordCount | undefined,
): void {
  // Lower-cased once up front: the per-word work below is what dominates indexing time.
  const normalized = text.normalize("NFKC").toLowerCase();
  if (count !== undefined) count.words += textLength(normalized);
  for (const match of normalized.matchAll(tokenPattern)) {
    const [whole, cjk, spaceless] = match;
    if (cjk !== undefined) {
      pushCjk(terms, cjk);
      if (withWords && cjk.length >= 3) longRuns.push(cjk);
    } else if (spaceless !== undefined) {
      terms.push(...segmentWords(spaceless));
    } else if (hasJoiner(whole)) {
      terms.push(...identifierTerms(whole));
      for (const part of whole.matchAll(wordPattern)) pushWord(terms, part[0]);
    } else {
      pushWord(terms, whole);
    }
  }
}

/** `[a-z0-9]` after lower-casing: the word characters of ASCII. */
function isAsciiWordCode(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 48 && code <= 57);
}

/** The identifier joiners (see {@link IDENTIFIER_JOINERS}) by character code. */
const joinerCodes = new Uint8Array(128);
for (const character of IDENTIFIER_JOINERS) joinerCodes[character.charCodeAt(0)] = 1;

/**
 * The token pattern's work on `text[start, end)`, which is all ASCII: a token is a word (`[a-z0-9]+`, with
 * inner apostrophes) followed by any number of joiner runs each followed by a word; NFKC changes no ASCII.
 */
function analyzeAscii(
  text: string,
  start: number,
  end: number,
  terms: string[],
  count: WordCount | undefined,
): void {
  const lower = text.slice(start, end).toLowerCase();
  const length = lower.length;
  let index = 0;
  while (index < length) {
    if (!isAsciiWordCode(lower.charCodeAt(index))) {
      index += 1;
      continue;
    }
    const tokenStart = index;
    // Runs of `[a-z0-9]` are `textLength`'s words: one starts here and after each apostrophe or joiner run.
    let runs = 1;
    let joined = false;
    let apostrophe = false;
    for (;;) {
      while (index < length && isAsciiWordCode(lower.charCodeAt(index))) index += 1;
      if (index >= length) break;
      const code = lower.charCodeAt(index);
      if (code === 39) {
        // `'` continues the word only when a word character follows.
        if (index + 1 < length && isAsciiWordCode(lower.charCodeAt(index + 1))) {
          apostrophe = true;
          runs += 1;
          index += 2;
          continue;
        }
        break;
      }
      if (code < 128 && joinerCodes[code] === 1) {
        let after = index + 1;
        while (after < length && joinerCodes[lower.charCodeAt(after)] === 1) after += 1;
        if (after < length && isAsciiWordCode(lower.charCodeAt(after))) {
          joined = true;
          runs += 1;
          index = after + 1;
          continue;
        }
      }
      break;
    }
    if (count !== undefined) count.words += runs;
    const token = lower.slice(tokenStart, index);
    if (joined) {
      terms.push(...identifierTerms(token));
      let partStart = 0;
      for (let at = 0; at <= token.length; at += 1) {
        if (at < token.length && joinerCodes[token.charCodeAt(at)] !== 1) continue;
        if (at > partStart) pushWord(terms, token.slice(partStart, at));
        partStart = at + 1;
      }
    } else if (apostrophe) {
      pushWord(terms, token);
    } else {
      terms.push(token);
      const stem = stemEnglish(token);
      if (stem !== token) terms.push(stem);
    }
  }
}

/** One unit of meaning in a query: a chunk covers it when it holds any of its alternative terms. */
export interface QueryConcept {
  /** Alternative index terms (a word and its stem), any of which counts. */
  readonly terms: readonly string[];
  /** Ticket ids, file names, URLs, numbers, names: a chunk holding all of them ranks first. */
  readonly identifier: boolean;
  /** A function word: ignored for coverage unless the query has nothing else. */
  readonly stopWord: boolean;
}

/** A query after analysis. */
export interface AnalyzedQuery {
  readonly text: string;
  /** The concepts whose coverage scores a chunk, deduplicated. */
  readonly concepts: readonly QueryConcept[];
  /** Every index term the query looks for (concept terms plus long CJK words), deduplicated. */
  readonly terms: readonly string[];
}

function looksLikeIdentifier(raw: string, isFirstWord: boolean): boolean {
  if (hasLetter.test(raw) && hasDigit.test(raw)) return true;
  if (digitsOnly.test(raw)) return raw.length >= 3;
  if (allCapitals.test(raw)) return true;
  // A capitalised word inside the query is most likely a name; the first word is capitalised anyway.
  return !isFirstWord && capitalised.test(raw) && raw.length >= 2;
}

/** Analyses a query into concepts (for coverage scoring) and terms (for the full-text match). */
export function analyzeQuery(query: string): AnalyzedQuery {
  const concepts = new Map<string, QueryConcept>();
  const extraTerms: string[] = [];
  const addConcept = (terms: readonly string[], identifier: boolean): void => {
    const key = terms.join(" ");
    if (key === "" || concepts.has(key)) return;
    concepts.set(key, { terms, identifier, stopWord: terms.every(isStopWord) });
  };
  const addWord = (raw: string, isFirstWord: boolean): void => {
    const term = normalizeWord(raw);
    if (term === "") return;
    const stem = stemEnglish(term);
    addConcept(
      stem === term ? [term] : [term, stem],
      !isStopWord(term) && looksLikeIdentifier(raw, isFirstWord),
    );
  };

  let first = true;
  for (const match of query.normalize("NFKC").matchAll(tokenPattern)) {
    const [whole, cjk, spaceless] = match;
    if (cjk !== undefined) {
      for (const segmented of segmentWords(cjk)) {
        const characters = [...segmented];
        if (characters.length <= 2 || isStopWord(segmented)) {
          addConcept([segmented], false);
          continue;
        }
        extraTerms.push(segmented);
        for (let index = 0; index + 1 < characters.length; index += 1) {
          addConcept([characters[index]! + characters[index + 1]!], false);
        }
      }
    } else if (spaceless !== undefined) {
      for (const segmented of segmentWords(spaceless)) addConcept([segmented.toLowerCase()], false);
    } else if (hasJoiner(whole)) {
      for (const term of identifierTerms(whole)) addConcept([term], true);
      for (const part of whole.matchAll(wordPattern)) addWord(part[0], false);
    } else {
      addWord(whole, first);
    }
    first = false;
  }
  const conceptList = [...concepts.values()];
  const terms = new Set<string>();
  for (const concept of conceptList) for (const term of concept.terms) terms.add(term);
  for (const term of extraTerms) terms.add(term);
  return { text: query, concepts: conceptList, terms: [...terms] };
}
