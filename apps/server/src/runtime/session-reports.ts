import type { WorkingMemory } from "@almanac/agent";
import type { TokenCounter } from "@almanac/core";
import type { SessionStats } from "../sessions/session-snapshot.js";

/** What the `/status` and `/history` reports are made from. */
export interface SessionReportInput {
  readonly memory: WorkingMemory;
  readonly systemPrompt: string;
  readonly stats: SessionStats;
  /** Tokens the next prompt would take (system prompt + summary + uncompacted messages). */
  readonly contextTokens: number;
  readonly contextWindow: number;
  readonly tokenCounter: TokenCounter;
}

/** The `/status` text: model, context use, messages, turns and compactions, waiting messages. */
export function statusReport(
  input: SessionReportInput & { readonly model: string; readonly queued: number },
): string {
  const { contextTokens: tokens, contextWindow: window } = input;
  return [
    `Model: ${input.model}`,
    `Context: ${tokens} / ${window} tokens (${((tokens / window) * 100).toFixed(1)}%, counted with ${input.tokenCounter.method})`,
    `Messages: ${input.memory.messages.length} (${input.memory.activeMessages().length} in the prompt)`,
    `Turns: ${input.stats.turns}; compactions: ${input.stats.compactions}`,
    `Waiting messages in this conversation: ${input.queued}`,
  ].join("\n");
}

/** The `/history` text: tokens per part of the context (system prompt, summary, messages by role, compacted). */
export function historyReport(input: SessionReportInput): string {
  const counter = input.tokenCounter;
  const byRole = new Map<string, { count: number; tokens: number }>();
  let compacted = 0;
  const active = new Set(input.memory.activeMessages().map((message) => message.id));
  for (const message of input.memory.messages) {
    if (!active.has(message.id)) {
      compacted += counter.countMessage(message);
      continue;
    }
    const entry = byRole.get(message.role) ?? { count: 0, tokens: 0 };
    byRole.set(message.role, {
      count: entry.count + 1,
      tokens: entry.tokens + counter.countMessage(message),
    });
  }
  const lines = [
    `System prompt (with the memory excerpt): ${counter.countText(input.systemPrompt)} tokens`,
    `Rolling summary: ${input.memory.summary ? counter.countText(input.memory.summary.text) : 0} tokens`,
  ];
  for (const role of ["user", "assistant", "tool"]) {
    const entry = byRole.get(role) ?? { count: 0, tokens: 0 };
    lines.push(`${role} messages: ${entry.count}, ${entry.tokens} tokens`);
  }
  lines.push(`Compacted (kept in the transcript, out of the prompt): ${compacted} tokens`);
  lines.push(`Total in the prompt: ${input.contextTokens} of ${input.contextWindow} tokens`);
  return lines.join("\n");
}
