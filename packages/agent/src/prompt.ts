import { createMessage, type Message } from "@almanac/core";
import type { RollingSummary } from "./working-memory.js";

/** Input of {@link buildPrompt}: the system prompt and the memory to turn into one request. */
export interface BuildPromptInput {
  readonly systemPrompt: string;
  readonly memory: {
    readonly summary: RollingSummary | undefined;
    activeMessages(): readonly Message[];
  };
}

/** Id of the system message {@link buildPrompt} creates; it is built per request and never stored. */
export const systemPromptMessageId = "system-prompt";

/**
 * The rolling summary as it appears in the system message: delimited, and introduced as background,
 * so the model does not answer it as if it were a new request.
 */
export function formatSummaryBlock(summary: RollingSummary): string {
  return [
    "The block below summarizes the earlier part of this conversation. It is background, not a new request.",
    "<conversation-summary>",
    summary.text,
    "</conversation-summary>",
  ].join("\n");
}

/**
 * The messages of one model request: a system message (the system prompt, then the rolling summary
 * when there is one) followed by the uncompacted messages. Compaction counts tokens on this same output.
 * No system message is sent when both the prompt and the summary are empty.
 */
export function buildPrompt(input: BuildPromptInput): Message[] {
  const { systemPrompt, memory } = input;
  const parts = [systemPrompt, memory.summary === undefined ? "" : formatSummaryBlock(memory.summary)].filter(
    (part) => part.trim() !== "",
  );
  // `[system].concat(active)`, not a spread after another element (which walks the history's iterator).
  const active = memory.activeMessages();
  if (parts.length === 0) return [...active];
  const system = createMessage({
    id: systemPromptMessageId,
    role: "system",
    timestamp: 0,
    content: parts.join("\n\n"),
  });
  return [system].concat(active);
}
