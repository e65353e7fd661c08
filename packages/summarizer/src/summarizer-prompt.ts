import type { SummaryReason } from "./summary-job.js";

/** The summarizer agent's system prompt (our own words): how to merge a conversation into a daily log. */
export const SUMMARIZER_PROMPT = `You keep a daily log: one Markdown file per day recording what happened in the conversations between a person and their assistant. You are given part of a conversation from one day. Merge whatever is worth remembering into that day's log with your tools, then stop.

How to work:
1. Call read_day_log first. Never change the log without having read it.
2. Pick out what is worth keeping: decisions and their reasons, facts learned about the person, their work or their preferences, tasks started, finished or handed over, problems and how they were solved, plans, dates, names, commitments. Leave out greetings, small talk, the assistant's reasoning, and anything already settled and unimportant.
3. Merge it into the log:
   - Do not add anything the log already says. When an entry covers the same topic, enrich that entry with the new detail (edit_day_log) instead of writing a second one.
   - Keep the log in chronological order. Entries are bullets that start with the local time, "- HH:MM …"; new events normally go at the end (append_day_log). When a day has several topics, short "## topic" headings may group them; keep the "# YYYY-MM-DD" heading at the top.
   - Copy exact identifiers character for character: file paths, URLs, ticket and issue ids, commands, version numbers, amounts, dates, error messages. Never paraphrase or round them.
   - Prefer small targeted changes (edit_day_log, append_day_log). Use rewrite_day_log only to restructure, and keep every existing entry when you do; a rewrite that drops most of the log is refused.
   - If a tool answers with an error, read it, fix the call and try again.
   - Write in the language the conversation uses. One fact or event per bullet, short and concrete.
   - Never record secrets: passwords, API keys, tokens, private keys.
4. Finish with one short plain sentence saying what you changed. If nothing in the conversation is worth storing, change nothing and say so plainly.`;

/** What the summarizer agent is told about one pass over one day. */
export interface SummarizerInput {
  readonly date: string;
  readonly timeZone: string;
  readonly path: string;
  readonly sessionKey: string;
  readonly reason: SummaryReason;
  /** The compaction's rolling summary, for orientation only. */
  readonly summary?: string;
  /** Rendered transcript entries of this pass. */
  readonly entries: readonly string[];
  /** 1-based pass number and total, when a long day is merged in several passes. */
  readonly part: number;
  readonly parts: number;
}

const reasonText: Record<SummaryReason, string> = {
  auto: "older messages were compacted automatically",
  command: "the person asked to compact the conversation",
  overflow: "the conversation overflowed the model's context",
  "new-session": "the person started a new conversation",
};

/** The user message of one summarizer pass. */
export function buildSummarizerInput(input: SummarizerInput): string {
  const lines = [
    `Day: ${input.date} (times are local, ${input.timeZone}). Log file: ${input.path}.`,
    `Conversation: ${input.sessionKey}. Handed over because ${reasonText[input.reason]}.`,
  ];
  if (input.parts > 1) {
    lines.push(
      `This is part ${input.part} of ${input.parts} of this day's messages; earlier parts are already merged.`,
    );
  }
  if (input.summary !== undefined && input.summary.trim() !== "") {
    const summary = input.summary.length > 2000 ? `${input.summary.slice(0, 2000)}…` : input.summary;
    lines.push(
      "",
      "Summary of the wider conversation (orientation only; it may cover other days, so store only what the messages below show):",
      summary,
    );
  }
  lines.push("", "Messages:", ...input.entries);
  return lines.join("\n");
}
