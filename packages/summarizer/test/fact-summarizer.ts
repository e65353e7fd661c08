import { type RecordedChatRequest, recordedText, type ScriptStep, script } from "@almanac/testkit";

/** The facts the tests plant: `FACT-` and an id, e.g. `FACT-K16`. */
const FACT = /FACT-[A-Z0-9]+/g;

/**
 * A scripted summarizer agent for the strict server's fallback, behaving as the prompt asks: read the
 * log first, append one bullet per fact of its part that the log does not show yet, then say what it did.
 */
export function factSummarizerStep(request: RecordedChatRequest): ScriptStep {
  const messages = request.messages;
  const last = messages.at(-1);
  const input = recordedText(messages.find((message) => message.role === "user")?.content);
  if (last?.role === "user") return script.toolCalls([{ name: "read_day_log", arguments: {} }]);
  const calls = new Map(
    messages.flatMap((message) => message.tool_calls ?? []).map((call) => [call.id, call.function.name]),
  );
  const lastTool = last?.role === "tool" ? calls.get(last.tool_call_id ?? "") : undefined;
  if (lastTool === "read_day_log") {
    const log = recordedText(last?.content);
    const facts = [...new Set(input.match(FACT) ?? [])].filter((fact) => !log.includes(`${fact} `));
    if (facts.length === 0) return script.text("Nothing new to store.");
    return script.toolCalls([
      { name: "append_day_log", arguments: { text: facts.map((fact) => `- ${fact} noted`).join("\n") } },
    ]);
  }
  return script.text("Stored the new facts.");
}
