import { BPE_SPLIT_PATTERNS } from "./bpe-rank-table.js";

/*
 * o200k's pre-tokenizer: the pieces its split pattern cuts text into, with the ASCII stretches cut by a scanner
 * instead of the pattern (token-counter.ts counts each piece with the byte-pair merge).
 */

// Character classes of ASCII for the o200k pattern's pieces ({@link o200kAsciiPieceEnd}).
const UPPER = 1;
const LOWER = 2;
const DIGIT = 3;
/** `\r` and `\n`: whitespace that no letter piece may start with. */
const LINE_BREAK = 4;
/** Space, tab, vertical tab, form feed: whitespace that may start a letter piece. */
const BLANK = 5;
/** Punctuation and control characters: neither letter, digit nor whitespace. */
const OTHER = 6;
const asciiClasses = new Uint8Array(128).fill(OTHER);
for (let code = 65; code <= 90; code += 1) asciiClasses[code] = UPPER;
for (let code = 97; code <= 122; code += 1) asciiClasses[code] = LOWER;
for (let code = 48; code <= 57; code += 1) asciiClasses[code] = DIGIT;
for (const code of [9, 11, 12, 32]) asciiClasses[code] = BLANK;
for (const code of [10, 13]) asciiClasses[code] = LINE_BREAK;

// No `u` flag: any UTF-16 unit above 0x7f (surrogates included) is found.
const nonAsciiCharacter = /[\u0080-\uffff]/g;
/** A character the pattern's `\s` matches (tested on one non-ASCII character). */
const NON_ASCII_SPACE = /^\s$/u;

/** Tab, line feed, vertical tab, form feed, carriage return, space: `\s` in ASCII. */
function isAsciiSpace(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13);
}

/**
 * Where the piece that o200k's split pattern ({@link BPE_SPLIT_PATTERNS}) matches at `start` of the all-ASCII
 * `text` ends: the pattern's alternatives (with their backtracking) worked out for ASCII, where `\p{L}` is
 * `[A-Za-z]`, `\p{N}` is `[0-9]`, `\s` is `[\t\n\v\f\r ]` and there are no marks. Counting the lines of a
 * memory file went mostly to the pattern; o200k-pieces.test.ts compares the pieces with it on random ASCII.
 */
function o200kAsciiPieceEnd(text: string, start: number, end: number): number {
  const kind = asciiClasses[text.charCodeAt(start)]!;
  // `[^\r\n\p{L}\p{N}]?[\p{Lu}…]*[\p{Ll}…]+(?:'s|…)?` or, with no lower case, `…[\p{Lu}…]+[\p{Ll}…]*(?:'s|…)?`.
  let letters = start;
  if ((kind === OTHER || kind === BLANK) && start + 1 < end) {
    const after = asciiClasses[text.charCodeAt(start + 1)]!;
    if (after === UPPER || after === LOWER) letters = start + 1;
  }
  const first = asciiClasses[text.charCodeAt(letters)]!;
  if (first === UPPER || first === LOWER) {
    let at = letters;
    while (at < end && asciiClasses[text.charCodeAt(at)] === UPPER) at += 1;
    while (at < end && asciiClasses[text.charCodeAt(at)] === LOWER) at += 1;
    return contractionEnd(text, at, end);
  }
  // `\p{N}{1,3}`
  if (kind === DIGIT) {
    let at = start + 1;
    while (at < end && at < start + 3 && asciiClasses[text.charCodeAt(at)] === DIGIT) at += 1;
    return at;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
  let other = -1;
  if (kind === OTHER) other = start;
  else if (
    text.charCodeAt(start) === 32 &&
    start + 1 < end &&
    asciiClasses[text.charCodeAt(start + 1)] === OTHER
  )
    other = start + 1;
  if (other !== -1) {
    let at = other;
    while (at < end && asciiClasses[text.charCodeAt(at)] === OTHER) at += 1;
    while (at < end) {
      const code = text.charCodeAt(at);
      if (code !== 10 && code !== 13 && code !== 47) break;
      at += 1;
    }
    return at;
  }
  // Whitespace: `\s*[\r\n]+` (up to the run's last line break), else `\s+(?!\S)`, else `\s+`.
  let runEnd = start;
  while (runEnd < end) {
    const runKind = asciiClasses[text.charCodeAt(runEnd)];
    if (runKind !== BLANK && runKind !== LINE_BREAK) break;
    runEnd += 1;
  }
  for (let at = runEnd - 1; at >= start; at -= 1)
    if (asciiClasses[text.charCodeAt(at)] === LINE_BREAK) return at + 1;
  if (runEnd === end || runEnd - start === 1) return runEnd;
  return runEnd - 1;
}

/** After a letter piece ending at `at`: past the optional contraction `'(?:[sS]|[dD]|[mM]|[tT]|[lL][lL]|[vV][eE]|[rR][eE])`. */
function contractionEnd(text: string, at: number, end: number): number {
  if (at + 1 >= end || text.charCodeAt(at) !== 39) return at;
  const next = text.charCodeAt(at + 1) | 0x20;
  if (next === 115 || next === 100 || next === 109 || next === 116) return at + 2;
  if (at + 2 >= end) return at;
  const third = text.charCodeAt(at + 2) | 0x20;
  if ((next === 108 && third === 108) || (next === 118 && third === 101) || (next === 114 && third === 101))
    return at + 3;
  return at;
}

/**
 * Calls `visit` with each piece of `text` as o200k's split pattern (`splitter`, flags `gu`) cuts it, in order,
 * and sums what it returns. ASCII stretches are cut by {@link o200kAsciiPieceEnd}: the pattern's match at a
 * piece's start reads at most two characters past the piece's end (a contraction's `'ll`, the character after
 * a run of letters, digits, punctuation or whitespace), so a piece the scanner finds in the stretch before the
 * next non-ASCII character is the pattern's if it ends three or more characters before it. The rest (the end of
 * such a stretch and the non-ASCII text) goes through the pattern, and the scanner takes over again after it.
 */
export function forEachO200kPiece(
  text: string,
  splitter: RegExp,
  visit: (text: string, start: number, end: number) => number,
): number {
  let sum = 0;
  const length = text.length;
  let start = 0;
  while (start < length) {
    nonAsciiCharacter.lastIndex = start;
    const stop = nonAsciiCharacter.exec(text)?.index ?? length;
    // Whitespace runs are one piece across the ASCII boundary (`\s*[\r\n]+`, `\s+` take U+3000, U+00A0, …
    // too): before non-ASCII whitespace, the ASCII whitespace leading up to it is the pattern's to cut.
    let limit = stop;
    if (stop < length && NON_ASCII_SPACE.test(text.charAt(stop)))
      while (limit > start && isAsciiSpace(text.charCodeAt(limit - 1))) limit -= 1;
    while (start < stop) {
      const end = o200kAsciiPieceEnd(text, start, stop);
      if (stop < length && end + 2 >= limit) break;
      sum += visit(text, start, end);
      start = end;
    }
    if (start >= length) break;
    // The pattern from here until it has passed the non-ASCII character.
    splitter.lastIndex = start;
    while (start <= stop) {
      const match = splitter.exec(text);
      if (match === null) return sum;
      if (match[0] === "") {
        splitter.lastIndex += 1;
      } else {
        sum += visit(text, match.index, match.index + match[0].length);
      }
      start = splitter.lastIndex;
    }
  }
  return sum;
}

/** The pieces o200k's pattern splits `text` into, found as counting finds them (the tests compare with it). */
export function o200kPieces(text: string): string[] {
  const pieces: string[] = [];
  forEachO200kPiece(text, new RegExp(BPE_SPLIT_PATTERNS.o200k_base, "gu"), (_, start, end) => {
    pieces.push(text.slice(start, end));
    return 0;
  });
  return pieces;
}
