/**
 * Characters of reply text one streamed card shows before the reply continues in a new card. Feishu refuses a card
 * request body over 30 KB, and the text is escaped twice on the way (card JSON inside the request's JSON): a quote
 * or backslash then takes 4 bytes, a CJK character 3, a newline 3. 7000 × 4 = 28 000 bytes leaves room for the
 * card's own JSON and the request's other fields; a slice that still measures too large is cut shorter.
 */
export const STREAM_CARD_CHARACTER_LIMIT = 7000;

/** A slice cut shorter than this is a sign the measure cannot be met: it is taken as it is. */
const MIN_SLICE_CHARACTERS = 256;

/**
 * Where the card starting at `start` of `text` ends: `text.length` when the rest fits one card, else a cut at the
 * last paragraph break (or line break, or space) in the first half-to-full `limit` characters, so that slices
 * are exact pieces of the text (their concatenation is the text) and stay the same as the text grows.
 * @param fits whether a rendered slice fits a card (measured the way Feishu measures the request)
 */
export function nextCardCut(
  text: string,
  start: number,
  fits: (markdown: string) => boolean,
  limit = STREAM_CARD_CHARACTER_LIMIT,
): number {
  for (let budget = limit; ; budget = Math.floor(budget * 0.9)) {
    const end =
      text.length - start <= budget ? text.length : start + cutWithin(text.slice(start, start + budget));
    if (budget <= MIN_SLICE_CHARACTERS || fits(renderCardSlice(text, start, end))) return end;
  }
}

/** The length of the first piece of `window`: up to its last paragraph break, line break or space past half. */
function cutWithin(window: string): number {
  const half = Math.floor(window.length / 2);
  for (const separator of ["\n\n", "\n", " "]) {
    const at = window.lastIndexOf(separator);
    if (at >= half) return at + separator.length;
  }
  return window.length;
}

/**
 * The Markdown a card shows for `text.slice(start, end)`: the slice itself, with a code fence reopened at its start
 * when the slice begins inside one, and closed at its end when it ends inside one, so every card renders on its
 * own while the slices together stay exactly the text.
 */
export function renderCardSlice(text: string, start: number, end: number): string {
  const opening = openFenceAt(text, start);
  const closing = openFenceAt(text, end);
  const body = text.slice(start, end);
  const head = opening === undefined ? "" : `${opening.line}\n`;
  const tail = closing === undefined ? "" : `${body.endsWith("\n") ? "" : "\n"}${closing.marker}`;
  return `${head}${body}${tail}`;
}

/** The code fence still open at `position` of `text` (its opening line and marker), if any. */
function openFenceAt(text: string, position: number): { line: string; marker: string } | undefined {
  let open: { line: string; marker: string } | undefined;
  for (const line of text.slice(0, position).split("\n")) {
    const fence = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence === null) continue;
    const marker = fence[1] as string;
    if (open === undefined) open = { line: line.trimStart(), marker };
    else if (marker[0] === open.marker[0] && marker.length >= open.marker.length && line.trim() === marker)
      open = undefined;
  }
  return open;
}
