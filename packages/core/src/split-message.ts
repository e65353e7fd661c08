/**
 * Splits Markdown into chunks of at most `limit` characters for platforms with a message size limit
 * (Discord: 2000). Cuts fall on paragraph, then line, then word boundaries; a fenced code block is never cut
 * in a way that leaves a chunk with an unclosed fence: a block too long for one chunk is split by lines and
 * every piece is re-wrapped in the same fence (language tag kept), so each message renders on its own.
 */
export function splitMessage(text: string, limit: number): string[] {
  if (!Number.isInteger(limit) || limit < 32)
    throw new RangeError("splitMessage: limit must be an integer >= 32");
  if (text.length <= limit) return text.length === 0 ? [] : [text];
  const chunks: string[] = [];
  let current = "";
  const flush = () => {
    if (current.trim() !== "") chunks.push(current.replace(/\n+$/, ""));
    current = "";
  };
  const add = (piece: string, separator: string) => {
    if (current === "") current = piece;
    else if (current.length + separator.length + piece.length <= limit) current += separator + piece;
    else {
      flush();
      current = piece;
    }
  };
  for (const block of markdownBlocks(text)) {
    if (block.length <= limit) {
      add(block, "\n\n");
      continue;
    }
    const pieces =
      block.startsWith("```") || block.startsWith("~~~")
        ? splitFence(block, limit)
        : splitProse(block, limit);
    for (const piece of pieces) add(piece, "\n");
  }
  flush();
  return chunks;
}

/** Paragraphs and whole fenced code blocks, in order. */
function markdownBlocks(text: string): string[] {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  const blocks: string[] = [];
  let paragraph: string[] = [];
  let fence: { marker: string; lines: string[] } | undefined;
  const endParagraph = () => {
    if (paragraph.length > 0) blocks.push(paragraph.join("\n"));
    paragraph = [];
  };
  for (const line of lines) {
    if (fence) {
      fence.lines.push(line);
      if (line.trim().startsWith(fence.marker) && line.trim().replace(/[`~]/g, "") === "") {
        blocks.push(fence.lines.join("\n"));
        fence = undefined;
      }
      continue;
    }
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (opening) {
      endParagraph();
      fence = { marker: opening[1] as string, lines: [line] };
      continue;
    }
    if (line.trim() === "") endParagraph();
    else paragraph.push(line);
  }
  if (fence) blocks.push([...fence.lines, fence.marker].join("\n")); // close an unterminated fence
  endParagraph();
  return blocks;
}

function splitFence(block: string, limit: number): string[] {
  const lines = block.split("\n");
  const open = lines[0] as string;
  const close = (/^\s*(`{3,}|~{3,})/.exec(open)?.[1] ?? "```") as string;
  const body = lines.slice(1, -1);
  const room = limit - open.length - close.length - 2;
  const pieces: string[] = [];
  let current: string[] = [];
  let size = 0;
  const push = () => {
    if (current.length > 0) pieces.push([open, ...current, close].join("\n"));
    current = [];
    size = 0;
  };
  for (const line of body) {
    for (const part of hardWrap(line, room)) {
      if (size + part.length + 1 > room) push();
      current.push(part);
      size += part.length + 1;
    }
  }
  push();
  return pieces;
}

function splitProse(block: string, limit: number): string[] {
  const pieces: string[] = [];
  let current = "";
  for (const line of block.split("\n")) {
    for (const part of hardWrap(line, limit)) {
      if (current === "") current = part;
      else if (current.length + 1 + part.length <= limit) current += `\n${part}`;
      else {
        pieces.push(current);
        current = part;
      }
    }
  }
  if (current !== "") pieces.push(current);
  return pieces;
}

/** Cuts one over-long line at spaces where possible, else hard at the limit (never splitting a surrogate pair). */
function hardWrap(line: string, limit: number): string[] {
  if (line.length <= limit) return [line];
  const parts: string[] = [];
  let rest = line;
  while (rest.length > limit) {
    let cut = rest.lastIndexOf(" ", limit);
    if (cut < limit / 2) cut = limit;
    const code = rest.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut).replace(/^ /, "");
  }
  if (rest !== "") parts.push(rest);
  return parts;
}
