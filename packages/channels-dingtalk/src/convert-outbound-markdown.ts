// DingTalk renders only a subset of Markdown in robot `markdown` messages. Its open platform's
// message-type reference (https://open.dingtalk.com/document/development/robot-message-type and
// https://open.dingtalk.com/document/orgapp/message-type, "markdown类型") lists exactly: headings `#`…`######`, quotes `>`, bold `**`,
// italic `*`, links `[text](url)`, images `![](url)`, unordered `- item` and ordered `1. item`
// lists, and a line break as `\n` with two spaces around it. Fenced code blocks and tables are not in
// it (they arrive as raw backticks and pipes), so they are rewritten here into that subset, keeping
// every line of code and every table cell readable. Inline `code` is left alone: where it is not
// rendered its backticks still read as quotes.

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)$/u;
const TABLE_DIVIDER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/u;
/** Two trailing spaces: a hard line break, as DingTalk documents for keeping a line break. */
const LINE_BREAK = "  ";

/** Backslash-escapes what the subset would read as markup inside a line of code. */
function escapeMarkup(line: string): string {
  return line.replace(/[\\*_[\]`<]/gu, (character) => `\\${character}`);
}

/**
 * A fenced code block as quoted lines (`> …` with a hard break each), its indentation kept with
 * no-break spaces and its markup escaped, so the code keeps its line breaks and shape.
 */
function codeBlockToQuote(code: readonly string[], language: string): string[] {
  const lines = code.map((line) => {
    const indent = /^[ \t]*/u.exec(line)?.[0] ?? "";
    const spaces = indent.replace(/\t/gu, "    ").replace(/ /gu, "\u00a0");
    const body = escapeMarkup(line.slice(indent.length));
    return `> ${spaces}${body}${LINE_BREAK}`;
  });
  const label = language === "" ? [] : [`> *${escapeMarkup(language)}*${LINE_BREAK}`];
  return ["", ...label, ...(lines.length === 0 ? [">"] : lines), ""];
}

/** The cells of a table row (outer pipes optional, `\|` kept as a pipe). */
function cells(row: string): string[] {
  const trimmed = row
    .trim()
    .replace(/^\|/u, "")
    .replace(/(?<!\\)\|$/u, "");
  return trimmed.split(/(?<!\\)\|/u).map((cell) => cell.trim().replace(/\\\|/gu, "|"));
}

/** A table as one list item per row: `- **Column**: value · **Column**: value`. */
function tableToList(header: readonly string[], rows: readonly string[][]): string[] {
  const names = header.map((name, index) => (name === "" ? `${index + 1}` : name));
  const items = rows.map((row) => {
    const pairs = names.flatMap((name, index) => {
      const value = row[index] ?? "";
      return value === "" ? [] : [`**${name}**: ${value}`];
    });
    return `- ${pairs.length === 0 ? "—" : pairs.join(" · ")}`;
  });
  return ["", ...(items.length === 0 ? [`- ${names.map((name) => `**${name}**`).join(" · ")}`] : items), ""];
}

/**
 * Rewrites Markdown into the subset DingTalk documents for robot messages: fenced code blocks
 * become quoted lines, tables become one list item per row. Everything else passes unchanged.
 */
export function toDingTalkMarkdown(markdown: string): string {
  const lines = markdown.split("\n");
  const output: string[] = [];
  let index = 0;
  while (index < lines.length) {
    const line = lines[index]!;
    const fence = FENCE_OPEN.exec(line);
    if (fence !== null) {
      const marker = fence[1]!;
      const closing = new RegExp(`^ {0,3}${marker[0] === "`" ? "`" : "~"}{${marker.length},}\\s*$`, "u");
      const code: string[] = [];
      index += 1;
      while (index < lines.length && !closing.test(lines[index]!)) {
        code.push(lines[index]!);
        index += 1;
      }
      index += 1; // the closing fence (or the end of an unclosed block)
      output.push(...codeBlockToQuote(code, fence[2]!.trim().split(/\s+/u)[0] ?? ""));
      continue;
    }
    const next = lines[index + 1];
    if (line.includes("|") && next?.includes("|") && TABLE_DIVIDER.test(next)) {
      const header = cells(line);
      const rows: string[][] = [];
      index += 2;
      while (index < lines.length && lines[index]!.includes("|") && lines[index]!.trim() !== "") {
        rows.push(cells(lines[index]!));
        index += 1;
      }
      output.push(...tableToList(header, rows));
      continue;
    }
    output.push(line);
    index += 1;
  }
  return output
    .join("\n")
    .replace(/\n{3,}/gu, "\n\n")
    .replace(/^\n+|\n+$/gu, "");
}
