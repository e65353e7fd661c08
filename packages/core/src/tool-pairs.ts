import { createMessage, type Message, toolCallsOf, toolResultsOf } from "./message.js";

/** Text of the result added for a tool call whose real result was never recorded. */
export const MISSING_TOOL_RESULT_TEXT =
  "This call has no result: the run was interrupted (the server stopped or restarted) before the call finished or was approved. Assume it did not complete.";

/**
 * Makes a conversation valid for strict providers: every assistant tool call gets a result right after its
 * message, and tool results that answer no preceding call are dropped. Returns the same array when nothing
 * needed repair. Used after a crash (a turn cut short) and as a safety net before sending a prompt.
 * `intactPrefix` leading messages are known to be intact already (see {@link pairsIntact}).
 */
export function repairToolPairs(messages: readonly Message[], intactPrefix = 0): readonly Message[] {
  return pairsIntact(messages, intactPrefix) ? messages : rebuildToolPairs(messages);
}

/** {@link repairToolPairs} by building the repaired copy (the same array back when nothing changed). */
export function rebuildToolPairs(messages: readonly Message[]): readonly Message[] {
  const repaired: Message[] = [];
  let changed = false;
  let index = 0;
  while (index < messages.length) {
    const message = messages[index] as Message;
    index += 1;
    if (message.role === "tool") {
      // A tool message here did not follow an assistant message with calls: it answers nothing.
      changed = true;
      continue;
    }
    repaired.push(message);
    const calls = message.role === "assistant" ? toolCallsOf(message) : [];
    if (calls.length === 0) continue;
    const open = new Set(calls.map((call) => call.id));
    while (index < messages.length && (messages[index] as Message).role === "tool") {
      const toolMessage = messages[index] as Message;
      index += 1;
      const results = toolResultsOf(toolMessage);
      if (results.length > 0 && results.every((result) => open.has(result.callId))) {
        for (const result of results) open.delete(result.callId);
        repaired.push(toolMessage);
      } else {
        changed = true;
      }
    }
    for (const call of calls) {
      if (!open.has(call.id)) continue;
      changed = true;
      repaired.push(
        createMessage({
          role: "tool",
          timestamp: message.timestamp,
          content: [
            { type: "tool_result", callId: call.id, content: MISSING_TOOL_RESULT_TEXT, isError: true },
          ],
        }),
      );
    }
  }
  return changed ? repaired : messages;
}

/**
 * True when {@link repairToolPairs} would change nothing, found without building a copy: it runs on the whole
 * history several times a turn (0.2 ms a turn at 600 messages when it built one every time).
 *
 * Only the messages from `from` on are looked at: when the ones before are intact by themselves, every call
 * among them is answered before `from`, so the whole list is intact exactly when the rest is.
 */
export function pairsIntact(messages: readonly Message[], from = 0): boolean {
  // The calls of the last assistant message that made any, while its tool messages follow; else undefined.
  let open: Set<string> | undefined;
  for (let index = from; index < messages.length; index += 1) {
    const message = messages[index] as Message;
    if (message.role === "tool") {
      if (open === undefined) return false;
      let results = 0;
      for (const block of message.content) {
        if (block.type !== "tool_result") continue;
        if (!open.has(block.callId)) return false;
        results += 1;
      }
      if (results === 0) return false;
      for (const block of message.content) if (block.type === "tool_result") open.delete(block.callId);
      continue;
    }
    if (open !== undefined && open.size > 0) return false;
    open = undefined;
    if (message.role !== "assistant") continue;
    for (const block of message.content) {
      if (block.type !== "tool_call") continue;
      open ??= new Set();
      open.add(block.id);
    }
  }
  return open === undefined || open.size === 0;
}
