import { defineTool, type Tool } from "@almanac/agent";
import { type TokenCounter, UserError } from "@almanac/core";
import { z } from "zod";
import { findSection, joinLines, linesOf, sectionsNamed } from "./markdown-sections.js";
import { countMemoryTokens, type StagedMemory, topicPath, topicSlug } from "./staged-memory.js";

/** What the tools need besides the stage. */
export interface ConsolidationToolOptions {
  readonly counter: TokenCounter;
  /** MEMORY.md's budget in tokens (counted as the memory excerpt counts them). */
  readonly budgetTokens: number;
}

function occurrences(text: string, needle: string): number {
  let count = 0;
  for (let index = text.indexOf(needle); index !== -1; index = text.indexOf(needle, index + needle.length)) {
    count += 1;
  }
  return count;
}

/** The line a moved section leaves in MEMORY.md, so the assistant knows where the detail went. */
export function topicPointer(path: string): string {
  return `- More in ${path}`;
}

/**
 * The consolidation agent's tools. They act on the run's stage only (MEMORY.md and the topic files under
 * `memory/topics/`; no path argument reaches anything else), and every change stays staged until the run commits.
 */
export function createConsolidationTools(stage: StagedMemory, options: ConsolidationToolOptions): Tool[] {
  const { counter, budgetTokens } = options;
  const size = () => {
    const content = stage.memory();
    const tokens = countMemoryTokens(counter, content);
    const over = tokens - budgetTokens;
    return (
      `MEMORY.md: ${linesOf(content).length} lines, ${tokens} tokens of its ${budgetTokens}-token budget` +
      (over > 0 ? ` (${over} over: move less-used sections out with move_section_to_topic)` : "")
    );
  };

  const readMemory = defineTool({
    name: "read_memory",
    description: "Read MEMORY.md as it is now, including your own changes so far, with its size and budget.",
    parameters: z.object({}),
    async execute() {
      return `[${size()}]\n${stage.memory()}`;
    },
  });

  const editMemory = defineTool({
    name: "edit_memory",
    description:
      "Replace one exact passage of MEMORY.md (new_text empty removes it). old_text must match exactly, line breaks included, and occur once; include neighbouring words to make it unique.",
    parameters: z.object({
      old_text: z.string().min(1).describe("The exact text to replace."),
      new_text: z.string().describe("The text to put in its place; empty to remove the passage."),
    }),
    async execute({ old_text: oldText, new_text: newText }) {
      const content = stage.memory();
      const found = occurrences(content, oldText);
      if (found !== 1) {
        throw new UserError(
          "memory.edit_mismatch",
          found === 0
            ? "old_text was not found in MEMORY.md. Call read_memory and copy the passage exactly."
            : `old_text occurs ${found} times in MEMORY.md. Include more surrounding text so it occurs once.`,
        );
      }
      const start = content.indexOf(oldText);
      let next = content.slice(0, start) + newText + content.slice(start + oldText.length);
      // Removing a whole line leaves no empty line behind.
      if (newText === "") next = next.replace(/\n\n\n+/g, "\n\n");
      stage.replaceMemory(next);
      return `Edited. ${size()}.`;
    },
  });

  const addToMemory = defineTool({
    name: "add_to_memory",
    description:
      "Add one or more bullets to MEMORY.md: at the end of the section under `heading` (created at the end of the file when missing), or at the end of the file without one.",
    parameters: z.object({
      text: z.string().min(1).describe("Markdown to add, e.g. '- Lives in Lyon (since 2026-11-30)'."),
      heading: z.string().optional().describe("The section to add it to, e.g. 'About me'."),
    }),
    async execute({ text, heading }) {
      const added = linesOf(text.endsWith("\n") ? text : `${text}\n`);
      const lines = linesOf(stage.memory());
      if (heading === undefined || heading.trim() === "") {
        stage.replaceMemory(joinLines([...lines, ...added]));
        return `Added at the end. ${size()}.`;
      }
      if (sectionsNamed(lines, heading).length === 0) {
        const title = heading.replace(/^#+\s*/, "").trim();
        const gap = lines.length > 0 && (lines.at(-1) ?? "").trim() !== "" ? [""] : [];
        stage.replaceMemory(joinLines([...lines, ...gap, `## ${title}`, ...added]));
        return `Added under a new heading "## ${title}" at the end. ${size()}.`;
      }
      const section = findSection(lines, heading);
      stage.replaceMemory(joinLines([...lines.slice(0, section.end), ...added, ...lines.slice(section.end)]));
      return `Added under "${section.title}". ${size()}.`;
    },
  });

  const moveSection = defineTool({
    name: "move_section_to_topic",
    description:
      "Move a section of MEMORY.md (its heading and everything under it) to the topic file memory/topics/<topic>.md, which memory search finds. MEMORY.md keeps the heading and a line pointing to the file.",
    parameters: z.object({
      heading: z.string().min(1).describe("The section's heading, e.g. 'Projects'."),
      topic: z
        .string()
        .min(1)
        .describe("The topic file's name, e.g. 'projects'; several sections may share one."),
    }),
    async execute({ heading, topic }) {
      const slug = topicSlug(topic);
      if (slug === undefined)
        throw new UserError("memory.edit_mismatch", "Give the topic a name with letters or digits.");
      const path = topicPath(slug);
      const lines = linesOf(stage.memory());
      const section = findSection(lines, heading);
      if (section.level < 2)
        throw new UserError("memory.edit_mismatch", "The title of MEMORY.md stays; move a section under it.");
      const pointer = topicPointer(path);
      const body = lines.slice(section.start + 1, section.end).filter((line) => line !== pointer);
      if (body.every((line) => line.trim() === ""))
        throw new UserError("memory.edit_mismatch", `"${section.title}" has nothing under it to move.`);
      const moved = [lines[section.start] ?? "", ...body].join("\n");
      const existing = await stage.topic(path);
      // A section moved there already (a run merged again after a conflict) is not added twice.
      const topicContent = existing.includes(moved)
        ? existing
        : existing === ""
          ? `# ${topic.trim()}\n\n${moved}\n`
          : `${existing}${existing.endsWith("\n") ? "" : "\n"}\n${moved}\n`;
      const after = lines.slice(section.end);
      const memory = joinLines([
        ...lines.slice(0, section.start + 1),
        pointer,
        ...(after.length > 0 && (after[0] ?? "").trim() !== "" ? [""] : []),
        ...after,
      ]);
      await stage.replaceBoth(memory, { path, content: topicContent });
      return `Moved "${section.title}" (${body.length} lines) to ${path}. ${size()}.`;
    },
  });

  const readTopic = defineTool({
    name: "read_topic",
    description: "Read a topic file memory/topics/<topic>.md as it is now.",
    parameters: z.object({ topic: z.string().min(1).describe("The topic's name, e.g. 'projects'.") }),
    async execute({ topic }) {
      const slug = topicSlug(topic);
      if (slug === undefined)
        throw new UserError("memory.edit_mismatch", "Give the topic a name with letters or digits.");
      const content = await stage.topic(topicPath(slug));
      return content === "" ? `${topicPath(slug)} does not exist yet.` : `[${topicPath(slug)}]\n${content}`;
    },
  });

  return [readMemory, editMemory, addToMemory, moveSection, readTopic];
}
