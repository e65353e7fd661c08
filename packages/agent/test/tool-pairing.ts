import { type Message, toolCallsOf, toolResultsOf } from "@almanac/core";

/**
 * Problems a strict provider would reject: a tool call not answered right after its assistant message,
 * or a result with no call before it. Empty when the conversation is valid.
 */
export function toolPairingProblems(messages: readonly Message[]): string[] {
  const problems: string[] = [];
  let open = new Set<string>();
  for (const message of messages) {
    if (message.role === "tool") {
      for (const result of toolResultsOf(message)) {
        if (!open.delete(result.callId)) problems.push(`result ${result.callId} answers no open call`);
      }
      continue;
    }
    for (const id of open) problems.push(`call ${id} has no result before the next ${message.role} message`);
    open = new Set(message.role === "assistant" ? toolCallsOf(message).map((call) => call.id) : []);
  }
  for (const id of open) problems.push(`call ${id} has no result at the end`);
  return problems;
}
