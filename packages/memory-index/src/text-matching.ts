import { cjkClass, latinWord, spacelessClass } from "./script-classes.js";

// Matching analysed terms in candidate texts without analysing them again (scoring and snippets do this for
// every candidate of every query): the text normalised as the analyser sees it, then substring searches with
// word boundaries that agree with text-analysis.ts's terms, and the text's length in words for BM25.

const wordCharacterTest = /[\p{L}\p{N}\p{M}]/u;
const cjkTest = new RegExp(`[${cjkClass}${spacelessClass}]`, "u");

/** Text prepared for {@link containsTerm}: NFKC, lower case (what the analyser sees). */
export function normalizeForMatching(text: string): string {
  // No ASCII shortcut here: analysis hands it the stretches the ASCII scanner did not take (they hold non-ASCII),
  // where testing first costs more than it saves. Whole candidate texts, mostly ASCII, go through
  // normalizeCandidateText.
  return text.normalize("NFKC").toLowerCase();
}

/**
 * Whether every code unit of `text` is ASCII: its UTF-8 length equals its length only then. `Buffer.byteLength`
 * answers several times faster than V8's NFKC proves ASCII text unchanged.
 */
export function isAscii(text: string): boolean {
  return Buffer.byteLength(text, "utf8") === text.length;
}

/**
 * {@link normalizeForMatching} for a whole candidate's text, with ASCII text only lower-cased (NFKC leaves it as
 * it is). Scoring and snippets normalise every candidate of every query, where NFKC was a fifth of scoring.
 */
export function normalizeCandidateText(text: string): string {
  return isAscii(text) ? text.toLowerCase() : normalizeForMatching(text);
}

/** Whether the code unit at `index` is a word character (`[\p{L}\p{N}\p{M}]`); false outside the text. */
function isWordCharacterAt(text: string, index: number): boolean {
  if (index < 0 || index >= text.length) return false;
  const code = text.charCodeAt(index);
  if (code < 128)
    return (code >= 97 && code <= 122) || (code >= 48 && code <= 57) || (code >= 65 && code <= 90);
  return wordCharacterTest.test(text[index]!);
}

/** The surface forms an analysed term can come from: itself and, for English words, its plurals. */
function surfaceForms(term: string): string[] {
  if (term.length < 3 || !latinWord.test(term)) return [term];
  const forms = [term, `${term}s`, `${term}es`];
  if (term.endsWith("y")) forms.push(`${term.slice(0, -1)}ies`);
  return forms;
}

/**
 * Whether analysing `normalized` (see {@link normalizeForMatching}) would yield `term`, checked
 * without analysing: a substring search with word boundaries (none for CJK, where every bigram
 * is a term). Scoring uses it on every candidate, so it must stay cheap; it agrees with
 * `analyzeText` except for rare apostrophe forms (`don't` → `dont`).
 */
export function containsTerm(normalized: string, term: string): boolean {
  return countTerm(normalized, term, 1) > 0;
}

/**
 * How many times analysing `normalized` would yield `term` (its term frequency), counted like
 * {@link containsTerm}; stops at `limit` (frequencies saturate in scoring, so counting on is waste).
 */
export function countTerm(normalized: string, term: string, limit = Number.POSITIVE_INFINITY): number {
  let count = 0;
  forEachOccurrence(normalized, term, () => {
    count += 1;
    return count < limit;
  });
  return count;
}

/**
 * Where analysing `normalized` would yield `term` (offsets of its surface forms, counted like
 * {@link countTerm}), in no particular order, at most `limit` of them. Scoring maps them to lines.
 */
export function termOffsets(normalized: string, term: string, limit = Number.POSITIVE_INFINITY): number[] {
  const offsets: number[] = [];
  forEachOccurrence(normalized, term, (offset) => {
    offsets.push(offset);
    return offsets.length < limit;
  });
  return offsets;
}

/** Calls `visit` with the offset of each occurrence of `term` until it returns false. */
function forEachOccurrence(normalized: string, term: string, visit: (offset: number) => boolean): void {
  if (term === "") return;
  if (cjkTest.test(term)) {
    for (let index = normalized.indexOf(term); index !== -1; index = normalized.indexOf(term, index + 1))
      if (!visit(index)) return;
    return;
  }
  const forms = surfaceForms(term);
  // Every surface form starts with the term (`polic` for `policy`/`policies`): one scan finds them all. Each
  // form's occurrences are visited in the order of the form list, then of the text, as form-by-form scans would.
  const prefix = forms.length > 3 ? term.slice(0, -1) : term;
  let later: number[] | undefined;
  for (let index = normalized.indexOf(prefix); index !== -1; index = normalized.indexOf(prefix, index + 1)) {
    if (isWordCharacterAt(normalized, index - 1)) continue;
    for (let form = 0; form < forms.length; form += 1) {
      const surface = forms[form]!;
      if (!normalized.startsWith(surface, index) || isWordCharacterAt(normalized, index + surface.length))
        continue;
      if (form === 0) {
        if (!visit(index)) return;
      } else {
        later ??= [];
        later.push(form, index);
      }
      break;
    }
  }
  if (later === undefined) return;
  for (let form = 1; form < forms.length; form += 1) {
    for (let at = 0; at < later.length; at += 2) if (later[at] === form && !visit(later[at + 1]!)) return;
  }
}

/**
 * Length of a text in words (each CJK character counting as one), for BM25's length normalization: what the
 * pattern `[CJK]|[\p{L}\p{N}\p{M}]+` would count, without a regular expression on ASCII. Scoring measures every
 * candidate of every query, where a regular expression was a visible share of a search.
 */
export function textLength(normalized: string): number {
  let length = 0;
  let inWord = false;
  for (let index = 0; index < normalized.length; ) {
    const code = normalized.charCodeAt(index);
    if (code < 128) {
      const word = (code >= 48 && code <= 57) || (code >= 97 && code <= 122) || (code >= 65 && code <= 90);
      if (word && !inWord) length += 1;
      inWord = word;
      index += 1;
      continue;
    }
    const point = normalized.codePointAt(index) ?? code;
    const character = String.fromCodePoint(point);
    index += character.length;
    if (inWord) {
      inWord = wordCharacterTest.test(character);
      // A CJK-script character that is no letter (㋐, ⺀) ends the word and counts on its own, as in the pattern.
      if (!inWord && cjkTest.test(character)) length += 1;
    } else if (cjkTest.test(character)) {
      length += 1;
    } else if (wordCharacterTest.test(character)) {
      length += 1;
      inWord = true;
    }
  }
  return length;
}
