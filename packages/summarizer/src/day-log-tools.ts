import { defineTool, type Tool } from "@almanac/agent";
import { type TokenCounter, UserError } from "@almanac/core";
import type { StagedMemoryFile } from "@almanac/memory-files";
import { z } from "zod";

function describeSize(text: string): string {
  const lines = text === "" ? 0 : text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  return `${lines} ${lines === 1 ? "line" : "lines"}, ${text.length} characters`;
}

function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + needle.length)) {
    found.push(index);
  }
  return found;
}

/** A bound on what `read_day_log` shows, so a huge log never makes a request overflow. */
export interface DayLogView {
  readonly counter: TokenCounter;
  /** Most tokens of log text one read returns; a longer log is shown as its heading and its latest lines. */
  readonly maxTokens: number;
}

/** The lines of `content` that fit `maxTokens`: the first line (the heading) and as many of the last as fit. */
function boundedView(content: string, view: DayLogView): { readonly text: string; readonly hidden: number } {
  if (view.counter.countText(content) <= view.maxTokens) return { text: content, hidden: 0 };
  const lines = content.split("\n");
  const head = lines[0] ?? "";
  let used = view.counter.countText(head) + 1;
  let start = lines.length;
  while (start > 1) {
    const cost = view.counter.countText(lines[start - 1] ?? "") + 1;
    if (used + cost > view.maxTokens) break;
    used += cost;
    start -= 1;
  }
  return { text: [head, ...lines.slice(start)].join("\n"), hidden: start - 1 };
}

/**
 * The summarizer agent's tools. They act on one staged daily log only (no path argument, so the
 * agent cannot touch another file), and every change stays staged until the job commits. With a
 * `view`, a log too long for the model's window is read as its heading and latest lines, and is
 * not rewritten whole (the agent has not seen all of it).
 */
export function createDayLogTools(stage: StagedMemoryFile, view?: DayLogView): Tool[] {
  const readDayLog = defineTool({
    name: "read_day_log",
    description: `Read the daily log ${stage.path} as it is now, including your own changes so far.`,
    parameters: z.object({}),
    async execute() {
      const content = stage.content();
      if (view === undefined) return `[${stage.path}: ${describeSize(content)}]\n${content}`;
      const shown = boundedView(content, view);
      if (shown.hidden === 0) return `[${stage.path}: ${describeSize(content)}]\n${content}`;
      return (
        `[${stage.path}: ${describeSize(content)}; too long to show whole, so lines 2–${shown.hidden + 1} are left out. ` +
        "Add new entries with append_day_log; edit only passages shown here; do not rewrite the log.]\n" +
        shown.text
      );
    },
  });

  const editDayLog = defineTool({
    name: "edit_day_log",
    description:
      "Replace one exact passage of the daily log. old_text must match the log exactly (spaces and line breaks included) and occur exactly once; include neighbouring words to make it unique.",
    parameters: z.object({
      old_text: z.string().min(1).describe("The exact text to replace."),
      new_text: z.string().describe("The text to put in its place."),
    }),
    async execute({ old_text: oldText, new_text: newText }) {
      const content = stage.content();
      const found = occurrences(content, oldText);
      if (found.length !== 1) {
        throw new UserError(
          "memory.edit_mismatch",
          found.length === 0
            ? "old_text was not found in the log. Call read_day_log and copy the passage exactly."
            : `old_text occurs ${found.length} times in the log. Include more surrounding text so it occurs once.`,
        );
      }
      const start = found[0] ?? 0;
      stage.replace(content.slice(0, start) + newText + content.slice(start + oldText.length));
      return `Edited ${stage.path} (now ${describeSize(stage.content())}).`;
    },
  });

  const appendDayLog = defineTool({
    name: "append_day_log",
    description: "Add text at the end of the daily log (a line break is added before it when needed).",
    parameters: z.object({
      text: z.string().min(1).describe("Markdown to add, e.g. one or more '- HH:MM …' bullets."),
    }),
    async execute({ text }) {
      const content = stage.content();
      const separator = content === "" || content.endsWith("\n") ? "" : "\n";
      stage.replace(`${content}${separator}${text.endsWith("\n") ? text : `${text}\n`}`);
      return `Appended to ${stage.path} (now ${describeSize(stage.content())}).`;
    },
  });

  const rewriteDayLog = defineTool({
    name: "rewrite_day_log",
    description:
      "Replace the whole daily log. Only for restructuring: keep every existing entry. A rewrite that drops most of the log is refused.",
    parameters: z.object({
      content: z.string().describe("The complete new content of the log."),
    }),
    async execute({ content }) {
      if (view !== undefined && view.counter.countText(stage.content()) > view.maxTokens) {
        throw new UserError(
          "memory.rewrite_refused",
          "The log is too long to have been read whole, so it is not rewritten. Use append_day_log or edit_day_log.",
        );
      }
      stage.replace(content.endsWith("\n") || content === "" ? content : `${content}\n`);
      return `Rewrote ${stage.path} (now ${describeSize(stage.content())}).`;
    },
  });

  return [readDayLog, editDayLog, appendDayLog, rewriteDayLog];
}
