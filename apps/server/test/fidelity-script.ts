import { summaryInstructionsTitle, summarySections } from "@almanac/compaction";
import {
  type RecordedChatMessage,
  type RecordedChatRequest,
  recordedText,
  type ScriptStep,
  script,
} from "@almanac/testkit";
import { createTokenCounter } from "@almanac/tokenizer";
import { isSummarizerRequest } from "./test-server.js";

/**
 * The scripted model of the memory-fidelity test: one fallback for the chat agent, the compactor and the
 * summarizer, each acting only on what its request carries (no list of facts, no canned answers), the way
 * a real model behaves. The test plants facts as `FACT-<id>` plus a sentence, e.g. `FACT-K16`.
 */

/** A planted fact id, e.g. `FACT-K16`. */
const FACT_ID = /FACT-[A-Z0-9]+/;

/** The name of the tool whose call `message` (a tool result) answers, from the request's assistant messages. */
function toolNameOf(
  request: RecordedChatRequest,
  message: RecordedChatMessage | undefined,
): string | undefined {
  if (message?.role !== "tool") return undefined;
  for (const earlier of request.messages) {
    const call = earlier.tool_calls?.find((candidate) => candidate.id === message.tool_call_id);
    if (call !== undefined) return call.function.name;
  }
  return undefined;
}

/** The arguments of the call `message` answers, parsed leniently (they are the script's own JSON). */
function toolArgumentsOf(request: RecordedChatRequest, message: RecordedChatMessage | undefined): string {
  for (const earlier of request.messages) {
    const call = earlier.tool_calls?.find((candidate) => candidate.id === message?.tool_call_id);
    if (call !== undefined) return call.function.arguments;
  }
  return "";
}

/** True for a compaction request: its system message is the rolling-summary instructions. */
export function isCompactionRequest(request: RecordedChatRequest): boolean {
  return recordedText(request.messages[0]?.content).startsWith(summaryInstructionsTitle);
}

const counter = createTokenCounter();

/** The statements of fact among rendered lines: a user's line naming a fact id that is not a question. */
function factStatements(lines: readonly string[], prefix: RegExp): string[] {
  return lines
    .filter((line) => prefix.test(line) && FACT_ID.test(line) && !line.trimEnd().endsWith("?"))
    .map((line) => line.replace(prefix, "").trim());
}

/**
 * The compactor: a summary with every required heading that carries forward each fact stated by the user,
 * from the previous summary and from the messages it is given, copied as they are; written within the
 * request's output cap (the oldest facts give way first), as a model cut off at `max_tokens` would.
 */
function compactionStep(request: RecordedChatRequest): ScriptStep {
  const material = recordedText(request.messages.at(-1)?.content);
  const split = material.indexOf("<messages>");
  const previous = material.slice(0, Math.max(0, split)).split("\n");
  const messages = material.slice(Math.max(0, split)).split("\n");
  const facts = [...new Set([...factStatements(previous, /^- /), ...factStatements(messages, /^\[user\] /)])];
  const files = [...new Set(material.match(/report-\d+\.txt/g) ?? [])];
  const cap = Number(request.max_tokens ?? request.max_completion_tokens ?? 512);
  const render = (kept: readonly string[]) => {
    const body: Record<string, string> = {
      Goal: "Help the owner go through the weekly reports and keep their notes.",
      Done: files.length === 0 ? "Chatted." : `Read ${files.join(", ")}.`,
      "Exact identifiers": kept.length === 0 ? "None." : kept.map((line) => `- ${line}`).join("\n"),
    };
    return summarySections.map((heading) => `## ${heading}\n${body[heading] ?? "None."}`).join("\n\n");
  };
  let kept = facts;
  while (kept.length > 0 && counter.countText(render(kept)) > cap) kept = kept.slice(1);
  return script.text(render(kept));
}

/** The lines of a summarizer pass's messages (its user message after `Messages:`). */
function passLines(request: RecordedChatRequest): string[] {
  const input = recordedText(request.messages.find((message) => message.role === "user")?.content);
  const start = input.indexOf("\nMessages:\n");
  return start === -1 ? [] : input.slice(start + "\nMessages:\n".length).split("\n");
}

/** `[HH:MM] user: text` → `- HH:MM text`: a day-log bullet copied from a transcript line. */
function bulletOf(line: string): string | undefined {
  const match = /^\[(\d\d:\d\d)\] user(?: \([^)]*\))?: (.+)$/.exec(line);
  return match ? `- ${match[1]} ${match[2]}` : undefined;
}

/**
 * The summarizer agent, as its prompt asks: read the log first; then append, copied from the pass's own
 * lines, every user line stating a fact the log does not hold yet, and the pass's first request as an
 * activity note; then say what it did.
 */
function summarizerStep(request: RecordedChatRequest): ScriptStep {
  const last = request.messages.at(-1);
  if (last?.role === "user") return script.toolCalls([{ name: "read_day_log", arguments: {} }]);
  const tool = toolNameOf(request, last);
  if (tool !== "read_day_log") return script.text("Merged the new facts into the log.");
  const log = recordedText(last?.content);
  const bullets: string[] = [];
  const seen = new Set<string>();
  for (const line of passLines(request)) {
    const bullet = bulletOf(line);
    const id = FACT_ID.exec(line)?.[0];
    if (bullet === undefined || id === undefined || seen.has(id) || log.includes(`${id} `)) continue;
    // Only statements of a fact; a question about one ("What do you remember about …?") is not news.
    if (line.trimEnd().endsWith("?")) continue;
    seen.add(id);
    bullets.push(bullet);
  }
  const activity = passLines(request)
    .map(bulletOf)
    .find((bullet) => bullet !== undefined && /report-\d+\.txt/.test(bullet) && !log.includes(bullet));
  if (activity !== undefined) bullets.unshift(activity);
  if (bullets.length === 0) return script.text("Nothing new to store.");
  return script.toolCalls([{ name: "append_day_log", arguments: { text: bullets.join("\n") } }]);
}

/** The line of a `memory_search` result (its snippets) that holds `id`, or undefined. */
export function lineHolding(toolResult: string, id: string): string | undefined {
  let snippets: string[] = [toolResult];
  try {
    const parsed: unknown = JSON.parse(toolResult);
    if (
      typeof parsed === "object" &&
      parsed !== null &&
      "results" in parsed &&
      Array.isArray(parsed.results)
    ) {
      snippets = parsed.results.map((result: unknown) =>
        typeof result === "object" &&
        result !== null &&
        "snippet" in result &&
        typeof result.snippet === "string"
          ? result.snippet
          : "",
      );
    }
  } catch {
    // Not JSON: read the text as it is.
  }
  return snippets
    .flatMap((snippet) => snippet.split("\n"))
    .find((line) => line.includes(`${id} `))
    ?.trim();
}

/**
 * The chat agent. A request to read a report calls `read_file`; a request to look something up, or a
 * question about a fact id, calls `memory_search`; the answer after a search about a fact id is the line
 * of the tool result that holds it ("not found" otherwise); other turns get a short reply.
 */
function chatStep(request: RecordedChatRequest): ScriptStep {
  const last = request.messages.at(-1);
  if (last?.role === "user") {
    const text = recordedText(last.content);
    const question = /What do you remember about (FACT-[A-Z0-9]+)\?/.exec(text);
    if (question) return script.toolCalls([{ name: "memory_search", arguments: { query: question[1] } }]);
    const reports = [...text.matchAll(/report-\d+\.txt/g)].map((match) => match[0]);
    const lookup = /look up (.+?) in my notes/.exec(text)?.[1];
    const calls = [
      ...reports.map((path) => ({ name: "read_file", arguments: { path } })),
      ...(lookup === undefined ? [] : [{ name: "memory_search", arguments: { query: lookup } }]),
    ];
    if (calls.length > 0) return script.toolCalls(calls);
    const fact = FACT_ID.exec(text)?.[0];
    return script.text(fact === undefined ? "Sure." : `Noted ${fact}.`);
  }
  if (toolNameOf(request, last) === "memory_search") {
    const query = /"query":"([^"]*)"/.exec(toolArgumentsOf(request, last))?.[1] ?? "";
    if (FACT_ID.test(query)) {
      const line = lineHolding(recordedText(last?.content), query);
      return script.text(
        line === undefined ? `I have nothing about ${query} in memory.` : `From memory: ${line}`,
      );
    }
    return script.text("Those are the notes I found.");
  }
  return script.text("Read it; the numbers look stable.");
}

/** The fallback of the scripted server for the whole test. */
export function fidelityStep(request: RecordedChatRequest): ScriptStep {
  if (isCompactionRequest(request)) return compactionStep(request);
  if (isSummarizerRequest(request)) return summarizerStep(request);
  return chatStep(request);
}
