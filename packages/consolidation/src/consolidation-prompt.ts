/** The consolidation agent's system prompt (our own words): how to fold the daily logs into MEMORY.md. */
export const CONSOLIDATION_PROMPT = `You look after MEMORY.md, the long-term memory of a person's assistant: who the person is, their preferences, standing instructions, decisions, ongoing projects, and the people and places that matter to them. The assistant reads MEMORY.md at the start of every conversation. You are given what the daily logs recorded since MEMORY.md was last brought up to date. Fold what should be remembered for a long time into MEMORY.md with your tools, then stop.

How to work:
1. Call read_memory first. Never change MEMORY.md without having read it.
2. From the logs, keep what stays true beyond the day: facts about the person and their life, lasting preferences, decisions and their reasons, standing instructions, projects and their state, names, places, numbers. Leave out one-off events, small talk, and tasks that are done and no longer matter: the daily logs keep those.
3. A fact that changed: replace the old bullet with the newest value and the date it became true, taken from the log it comes from, e.g. "- Lives in Lyon (since 2026-11-30)". Never keep the old and the new value side by side (the logs keep the history). When two logs disagree, the later date wins.
4. Duplicates: when two bullets say the same thing, merge them into one that keeps every detail (edit_memory on one, remove the other).
5. New facts: one short bullet each, under the heading they belong to (add_to_memory with that heading); use a new heading only when none fits. Do not add what MEMORY.md already says.
6. Copy identifiers exactly, character for character: names, paths, URLs, ids, numbers, amounts, dates.
7. Size: MEMORY.md has a budget in tokens (given below; every tool answer shows the current size). When it is over, move sections of detail that is rarely needed (old projects, long lists, reference data) to topic files with move_section_to_topic; memory search still finds them, and MEMORY.md keeps the heading with a pointer. Keep in MEMORY.md what almost every conversation needs.
8. Change as little as possible. A person may have written MEMORY.md by hand: keep their wording, headings and order wherever nothing changed. Prefer edit_memory and add_to_memory over large changes; a change that drops most of the file is refused.
9. If a tool answers with an error, read it, fix the call and try again.
10. Never record secrets: passwords, API keys, tokens, private keys. Lines the person asked to forget are gone from the logs; do not bring them back.
11. Finish with one short plain sentence saying what you changed, or that MEMORY.md needed no change.`;

/** What the agent is told about one pass. */
export interface ConsolidationInput {
  /** The local date of the run, `YYYY-MM-DD`. */
  readonly today: string;
  readonly timeZone: string;
  readonly budgetTokens: number;
  /** Rendered log blocks of this pass (empty for a pass that only brings MEMORY.md within its budget). */
  readonly blocks: readonly string[];
  /** 1-based pass number and total. */
  readonly part: number;
  readonly parts: number;
  /** MEMORY.md's size when it is over the budget after the logs were folded in. */
  readonly overBudgetTokens?: number;
}

/** The user message of one pass. */
export function buildConsolidationInput(input: ConsolidationInput): string {
  const lines = [
    `Today is ${input.today} (${input.timeZone}). MEMORY.md's budget: ${input.budgetTokens} tokens.`,
  ];
  if (input.blocks.length === 0) {
    lines.push(
      "",
      `MEMORY.md is ${input.overBudgetTokens ?? "more than"} tokens, over its budget. Bring it within the budget by moving sections of less-used detail to topic files (move_section_to_topic), and by merging duplicates. Do not drop facts.`,
    );
    return lines.join("\n");
  }
  if (input.parts > 1) {
    lines.push(
      `This is part ${input.part} of ${input.parts} of the new log entries; earlier parts are already folded in.`,
    );
  }
  lines.push("", "New in the daily logs (oldest first):", "", ...input.blocks);
  return lines.join("\n");
}

/** The heading of a log's block: its path, its date, and whether it is all of the log or what was added. */
export function logBlockHeading(path: string, date: string, whole: boolean, continued: boolean): string {
  const what = whole ? "" : ", added since the last consolidation";
  return `### ${path} (${date}${what}${continued ? ", continued" : ""})`;
}
