import { UserError } from "@almanac/core";

/** A heading and everything under it, up to the next heading of the same or a higher level. */
export interface MarkdownSection {
  /** Index of the heading line. */
  readonly start: number;
  /** Index just past the section's last line (trailing blank lines excluded). */
  readonly end: number;
  readonly level: number;
  /** The heading's text without the `#`s. */
  readonly title: string;
}

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;

/** The text of a heading as the agent may name it: `## Projects`, `Projects` and ` projects ` all match `## Projects`. */
function headingKey(text: string): string {
  return text
    .replace(/^#{1,6}\s+/, "")
    .trim()
    .replace(/\s+/g, " ")
    .toLocaleLowerCase();
}

/** Splits a file into lines, without the empty string after a final line break. */
export function linesOf(content: string): string[] {
  const lines = content.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/** Joins lines back into a file that ends with one line break. */
export function joinLines(lines: readonly string[]): string {
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

/** Every section of a file, in order. */
export function sectionsOf(lines: readonly string[]): MarkdownSection[] {
  const headings: Array<{ index: number; level: number; title: string }> = [];
  let fenced = false;
  for (const [index, line] of lines.entries()) {
    if (line.trimStart().startsWith("```")) fenced = !fenced;
    const match = fenced ? null : HEADING.exec(line);
    if (match !== null) headings.push({ index, level: (match[1] ?? "#").length, title: match[2] ?? "" });
  }
  return headings.map((heading, position) => {
    const next = headings.slice(position + 1).find((later) => later.level <= heading.level);
    let end = next?.index ?? lines.length;
    while (end > heading.index + 1 && (lines[end - 1] ?? "").trim() === "") end -= 1;
    return { start: heading.index, end, level: heading.level, title: heading.title };
  });
}

/** The sections whose heading is `heading` (compared without `#`s, case or extra spaces). */
export function sectionsNamed(lines: readonly string[], heading: string): MarkdownSection[] {
  const key = headingKey(heading);
  return sectionsOf(lines).filter((section) => headingKey(section.title) === key);
}

/** The one section whose heading is `heading` (`UserError` `memory.edit_mismatch` when none or several are). */
export function findSection(lines: readonly string[], heading: string): MarkdownSection {
  const found = sectionsNamed(lines, heading);
  if (found.length === 1) return found[0] as MarkdownSection;
  const known = sectionsOf(lines)
    .map((section) => `"${"#".repeat(section.level)} ${section.title}"`)
    .join(", ");
  throw new UserError(
    "memory.edit_mismatch",
    found.length === 0
      ? `No heading "${heading}" in MEMORY.md. Its headings are: ${known || "none"}.`
      : `The heading "${heading}" occurs ${found.length} times; merge those sections first with edit_memory.`,
  );
}
