import { createMessage, imageAsText, type Message, type ToolCallBlock } from "@almanac/core";
import { z } from "zod";
import { cutMiddle } from "./cheap-passes.js";

/** The section headings every summary has, in order. They stay in English so they can be checked. */
export const summarySections = [
  "Goal",
  "Constraints and preferences",
  "Done",
  "In progress",
  "Blocked",
  "Decisions",
  "Open questions",
  "Next steps",
  "Exact identifiers",
] as const;

/** The extra section a summary gets when it covers the early part of the current turn (the turn prefix). */
export const turnPrefixSection = "Current request so far";

/** First line of the summarizer's instructions; also how a scripted test server can recognize the request. */
export const summaryInstructionsTitle = "You keep the running memory of a long conversation.";

function headingList(withTurnPrefix: boolean): string {
  const headings = withTurnPrefix ? [...summarySections, turnPrefixSection] : [...summarySections];
  return headings.map((heading) => `## ${heading}`).join("\n");
}

/** The summarizer's instructions. Written for Almanac; the headings are fixed so the output can be validated. */
export function summaryInstructions(withTurnPrefix: boolean): string {
  return [
    summaryInstructionsTitle,
    "The oldest messages of a conversation between a user and an assistant that uses tools are about to leave",
    "the assistant's context. Your summary is all the assistant will keep of them, so write it for the",
    "assistant to carry on the work without asking the user to repeat anything.",
    "",
    "How to write it:",
    "- Merge, do not replace. <previous-summary> covers what happened before <messages>; together they are the",
    "  whole history. Keep every fact of the previous summary that still holds, update what changed, drop only",
    "  what is settled or obsolete.",
    "- Copy exact identifiers character for character: file paths, URLs, ids, names, numbers, dates, commands",
    "  and error messages. Never invent one. When unsure, quote.",
    "- Record what the user asked for, decided and prefers, and what is true now; not the chatter.",
    "- Tool outputs marked as shortened or cut were reduced on purpose: rely on what they say.",
    "- Write in the language the user writes in. Keep the headings below exactly as they are, in English, in",
    '  this order, each on its own line. Under a heading with nothing to say, write "None."',
    ...(withTurnPrefix
      ? [
          `- <current-request-so-far> is the work already done on the user's latest request, which stays visible`,
          `  to the assistant. Describe that work (steps taken, results, what remains) under "${turnPrefixSection}".`,
        ]
      : []),
    "- Answer with the summary in Markdown and nothing else.",
    "",
    headingList(withTurnPrefix),
  ].join("\n");
}

/** Renders messages as plain text for the summarizer; each message's text is capped at `maxChars`. */
export function renderForSummary(
  messages: readonly Message[],
  calls: ReadonlyMap<string, ToolCallBlock>,
  maxChars: number,
): string[] {
  return messages.map((message) => {
    const parts: string[] = [];
    for (const block of message.content) {
      switch (block.type) {
        case "text":
          parts.push(block.text);
          break;
        case "tool_call":
          parts.push(`→ calls ${block.name} ${block.arguments} (call ${block.id})`);
          break;
        case "tool_result": {
          const name = calls.get(block.callId)?.name ?? "tool";
          parts.push(`${block.isError ? "error from" : "output of"} ${name} (call ${block.callId}):`);
          parts.push(block.content);
          break;
        }
        case "image":
          parts.push(imageAsText(block));
          break;
        case "reasoning":
          break; // the assistant's private reasoning is not part of the record
      }
    }
    return `[${message.role}] ${cutMiddle(parts.join("\n"), maxChars)}`;
  });
}

/** Input of {@link buildSummaryRequest}. */
export interface SummaryRequestInput {
  readonly previousSummary: string | undefined;
  /** Rendered messages to fold into the summary. */
  readonly messages: readonly string[];
  /** Rendered early part of the current turn, when the current turn is itself being shortened. */
  readonly turnPrefix: readonly string[];
  /** What the user asked `/compact` to focus on. */
  readonly focus?: string;
}

/** The two messages of one summary request: instructions, then the material. */
export function buildSummaryRequest(input: SummaryRequestInput): Message[] {
  const withTurnPrefix = input.turnPrefix.length > 0;
  const material = [
    "<previous-summary>",
    input.previousSummary?.trim() || "None yet: this is the first summary.",
    "</previous-summary>",
    "",
    "<messages>",
    input.messages.length === 0 ? "None." : input.messages.join("\n\n"),
    "</messages>",
    ...(withTurnPrefix
      ? ["", "<current-request-so-far>", input.turnPrefix.join("\n\n"), "</current-request-so-far>"]
      : []),
    ...(input.focus === undefined || input.focus.trim() === ""
      ? []
      : ["", `The user asked the summary to focus on: ${input.focus.trim()}`]),
    "",
    "Write the merged summary now.",
  ].join("\n");
  return [
    createMessage({
      id: "summary-instructions",
      role: "system",
      timestamp: 0,
      content: summaryInstructions(withTurnPrefix),
    }),
    createMessage({ id: "summary-material", role: "user", timestamp: 0, content: material }),
  ];
}

/** Shortest summary accepted from a model, in characters. */
export const minimumSummaryChars = 80;

function hasHeading(text: string, heading: string): boolean {
  const escaped = heading.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^\\s{0,3}#{1,4}\\s*${escaped}\\s*:?\\s*$`, "im").test(text);
}

/** The headings a summary text lacks (empty when it has them all). */
export function missingSections(text: string, withTurnPrefix: boolean): string[] {
  const required = withTurnPrefix ? [...summarySections, turnPrefixSection] : [...summarySections];
  return required.filter((heading) => !hasHeading(text, heading));
}

/**
 * Neutralizes text that could close the summary's delimiter in the system prompt (the summary is model
 * output, and the material it was written from is user and tool text); unwraps a fenced answer.
 */
export function sanitizeSummary(text: string): string {
  // Some models wrap their whole answer in a Markdown fence; the summary is the inside.
  const fenced = /^\s*```[a-z]*\n([\s\S]*?)\n```\s*$/i.exec(text);
  const inner = fenced?.[1] ?? text;
  return inner.replace(/<\/?\s*conversation-summary\s*>/gi, "[conversation-summary]").trim();
}

/** Schema of a model's summary: long enough and with every section. */
export function summaryTextSchema(withTurnPrefix: boolean) {
  return z
    .string()
    .transform((text) => sanitizeSummary(text))
    .refine((text) => text.length >= minimumSummaryChars, {
      message: `the summary is empty or shorter than ${minimumSummaryChars} characters`,
    })
    .superRefine((text, context) => {
      const missing = missingSections(text, withTurnPrefix);
      if (missing.length > 0) {
        context.addIssue({ code: "custom", message: `the summary lacks the sections ${missing.join(", ")}` });
      }
    });
}
