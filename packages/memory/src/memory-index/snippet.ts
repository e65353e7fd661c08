import type { AnalyzedQuery } from "./text-analysis.js";

/**
 * The part of a chunk to show: the whole text when it fits in `maxChars`, otherwise whole lines
 * around the first line holding a query term (with `…` where text was left out).
 */
export function makeSnippet(text: string, query: AnalyzedQuery, maxChars: number): string {
  const trimmed = text.trim();
  if (trimmed.length <= maxChars) return trimmed;
  const lines = trimmed.split("\n");
  const lowered = lines.map((line) => line.normalize("NFKC").toLowerCase());
  const wanted = query.concepts.filter((concept) => !concept.stopWord).flatMap((concept) => concept.terms);
  let anchor = lowered.findIndex((line) => wanted.some((term) => line.includes(term)));
  if (anchor === -1) anchor = 0;
  let start = anchor;
  let end = anchor + 1;
  let length = lines[anchor]!.length;
  // Grow forwards first (the match and what follows it), then backwards, while it fits.
  while (end < lines.length && length + 1 + lines[end]!.length <= maxChars)
    length += 1 + lines[end++]!.length;
  while (start > 0 && length + 1 + lines[start - 1]!.length <= maxChars) length += 1 + lines[--start]!.length;
  const joined = lines.slice(start, end).join("\n");
  // A single line longer than the limit is cut (by code points, never inside a surrogate pair).
  const cut = joined.length > maxChars;
  const body = cut ? Array.from(joined).slice(0, maxChars).join("").trimEnd() : joined;
  return `${start > 0 ? "…\n" : ""}${body}${cut || end < lines.length ? "\n…" : ""}`;
}
