import { createMessage, type ToolCallBlock, toolCallsOf, toolResultsOf } from "@almanac/core";
import type { WorkingMemory } from "./working-memory.js";

/** Calls of the last assistant message that no later tool message answers. */
export function openToolCalls(messages: WorkingMemory["messages"]): ToolCallBlock[] {
  let lastAssistant = -1;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    if (messages[index]?.role === "assistant") {
      lastAssistant = index;
      break;
    }
  }
  const assistant = messages[lastAssistant];
  if (assistant === undefined) return [];
  const answered = new Set(
    messages
      .slice(lastAssistant + 1)
      .flatMap((message) => toolResultsOf(message).map((result) => result.callId)),
  );
  return toolCallsOf(assistant).filter((call) => !answered.has(call.id));
}

/**
 * Appends an error result for every open call, so memory stays valid for the next request
 * (every provider rejects a tool call without its result).
 */
export function answerOpenToolCalls(memory: WorkingMemory, content: string, timestamp: number): void {
  const open = openToolCalls(memory.messages);
  memory.append(
    ...open.map((call) =>
      createMessage({
        role: "tool",
        timestamp,
        content: [{ type: "tool_result", callId: call.id, content, isError: true }],
      }),
    ),
  );
}
