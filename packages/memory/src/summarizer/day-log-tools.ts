import { defineTool, type Tool } from "@almanac/agent";
import { UserError } from "@almanac/core";
import { z } from "zod";
import type { StagedMemoryFile } from "./staged-memory-file.js";

/** Names of the summarizer's tools, for prompts and tests. */
export const DAY_LOG_TOOL_NAMES = [
  "read_day_log",
  "edit_day_log",
  "append_day_log",
  "rewrite_day_log",
] as const;

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

/**
 * The summarizer agent's tools. They act on one staged daily log only (no path argument, so the
 * agent cannot touch another file), and every change stays staged until the job commits.
 */
export function createDayLogTools(stage: StagedMemoryFile): Tool[] {
  const readDayLog = defineTool({
    name: "read_day_log",
    description: `Read the whole daily log ${stage.path} as it is now, including your own changes so far.`,
    parameters: z.object({}),
    async execute() {
      const content = stage.content();
      return `[${stage.path}: ${describeSize(content)}]\n${content}`;
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
      stage.replace(content.endsWith("\n") || content === "" ? content : `${content}\n`);
      return `Rewrote ${stage.path} (now ${describeSize(stage.content())}).`;
    },
  });

  return [readDayLog, editDayLog, appendDayLog, rewriteDayLog];
}
