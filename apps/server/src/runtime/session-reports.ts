import type { WorkingMemory } from "@almanac/agent";
import { compactionCounters, compactionStateOf } from "@almanac/compaction";
import type { TokenCounter } from "@almanac/core";
import type { SessionStats } from "../sessions/session-snapshot.js";

/** What the `/status` and `/history` reports are made from. */
export interface SessionReportInput {
  readonly memory: WorkingMemory;
  readonly systemPrompt: string;
  readonly stats: SessionStats;
  /**
   * Tokens the next request would take (system prompt, summary, uncompacted messages, tool specs, framing),
   * corrected by the provider ratio: the session runtime's meter, the count compaction triggers on.
   */
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
    `Context: ${tokens} / ${window} tokens (${((tokens / window) * 100).toFixed(1)}%, ${meterNote(input)})`,
    `Messages: ${input.memory.messages.length} (${input.memory.activeMessages().length} in the prompt)`,
    `Turns: ${input.stats.turns}; compactions: ${input.stats.compactions}`,
    compactionLine(input.memory),
    `Waiting messages in this conversation: ${input.queued}`,
  ].join("\n");
}

/** Whether automatic compaction runs, and when paused: why, what still happens, and how to resume it. */
export function compactionLine(memory: WorkingMemory): string {
  const state = compactionStateOf(memory);
  if (!state.paused) {
    return `Automatic compaction: on (${state.strikes} of ${state.maxStrikes} strikes; a strike is a summary that left the context over its threshold without making room)`;
  }
  return (
    `Automatic compaction: paused after ${state.strikes} summaries in a row left the context over its threshold ` +
    `without making room. A request that would not fit the window is still compacted first. ` +
    `It resumes when the context is back under the threshold; /compact resumes it now.`
  );
}

/** How the count was made: the tokenizer, and the provider correction once usage has been reported. */
function meterNote(input: SessionReportInput): string {
  const ratio = input.memory.counters[compactionCounters.tokenRatio];
  const method = `counted with ${input.tokenCounter.method}`;
  return ratio === undefined ? method : `${method}, ×${ratio.toFixed(3)} to match the provider's usage`;
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
  const systemTokens = counter.countText(input.systemPrompt);
  const summaryTokens = input.memory.summary ? counter.countText(input.memory.summary.text) : 0;
  const lines = [
    `System prompt (with the memory excerpt): ${systemTokens} tokens`,
    `Rolling summary: ${summaryTokens} tokens`,
  ];
  let parts = systemTokens + summaryTokens;
  for (const role of ["user", "assistant", "tool"]) {
    const entry = byRole.get(role) ?? { count: 0, tokens: 0 };
    lines.push(`${role} messages: ${entry.count}, ${entry.tokens} tokens`);
    parts += entry.tokens;
  }
  lines.push(
    `Tool specs, request framing and the provider correction: ${input.contextTokens - parts} tokens`,
  );
  lines.push(`Compacted (kept in the transcript, out of the prompt): ${compacted} tokens`);
  lines.push(`Total in the prompt: ${input.contextTokens} of ${input.contextWindow} tokens`);
  return lines.join("\n");
}
