/**
 * The character classes text analysis and matching share (Unicode property escapes, for `v`/`u` regular
 * expressions): scripts written without spaces between words, and the plain lower-case Latin word.
 */

/** Han, Hiragana and Katakana (and the prolonged sound mark): indexed as characters, bigrams and words. */
export const cjkClass = "\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\u30fc";

/** Thai, Lao, Khmer and Myanmar: no spaces between words either; segmented with `Intl.Segmenter`. */
export const spacelessClass = "\\p{Script=Thai}\\p{Script=Lao}\\p{Script=Khmer}\\p{Script=Myanmar}";

/** A lower-case ASCII word: the only words that get English stems and plural forms. */
export const latinWord = /^[a-z]+$/u;
