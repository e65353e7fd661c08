import {
  type Message,
  messageText,
  type TokenCounter,
  type ToolCallBlock,
  toolCallsOf,
  toolResultsOf,
} from "@almanac/core";
import { z } from "zod";
import { cutMiddle } from "./cheap-passes.js";
import { sanitizeSummary, summarySections, turnPrefixSection } from "./summary-prompt.js";
import { firstLine, parseToolArguments } from "./tool-summaries.js";

/** Input of {@link buildStaticSummary}. */
export interface StaticSummaryInput {
  /** The rolling summary so far; kept verbatim (cut in the middle only if it alone exceeds the budget). */
  readonly previousSummary: string | undefined;
  readonly messages: readonly Message[];
  /** The early part of the current turn, when it is being shortened. */
  readonly turnPrefix: readonly Message[];
  readonly calls: ReadonlyMap<string, ToolCallBlock>;
  readonly counter: TokenCounter;
  /** Most tokens the summary may have. */
  readonly maxTokens: number;
}

const argumentsSchema = z.record(z.string(), z.unknown());
const pathKey = /^(path|paths|file|files|filename|file_path|target|directory|dir)$/i;
const urlPattern = /\bhttps?:\/\/[^\s<>"'`)\]]+/g;
const maxListed = 8;

/** Values under path-like keys of a call's arguments. */
function pathsOf(call: ToolCallBlock): string[] {
  const parsed = argumentsSchema.safeParse(parseToolArguments(call.arguments));
  if (!parsed.success) return [];
  const found: string[] = [];
  for (const [key, value] of Object.entries(parsed.data)) {
    if (!pathKey.test(key)) continue;
    if (typeof value === "string") found.push(value);
    if (Array.isArray(value)) for (const item of value) if (typeof item === "string") found.push(item);
  }
  return found;
}

/** At most `maxListed` items: the first few and the latest ones, with a count of what was left out. */
function listed(items: readonly string[], render: (item: string) => string = (item) => item): string[] {
  if (items.length <= maxListed) return items.map((item) => `- ${render(item)}`);
  const first = items.slice(0, 2).map((item) => `- ${render(item)}`);
  const last = items.slice(items.length - (maxListed - 2)).map((item) => `- ${render(item)}`);
  return [...first, `- … ${items.length - maxListed} more …`, ...last];
}

function unique(items: Iterable<string>): string[] {
  return [...new Set(items)];
}

function quote(text: string): string {
  return JSON.stringify(firstLine(text, 120));
}

interface Extract {
  readonly requests: string[];
  readonly tools: Map<string, number>;
  readonly files: string[];
  readonly errors: string[];
  readonly urls: string[];
  readonly lastAnswer: string | undefined;
}

function extract(messages: readonly Message[], calls: ReadonlyMap<string, ToolCallBlock>): Extract {
  const requests: string[] = [];
  const tools = new Map<string, number>();
  const files: string[] = [];
  const errors: string[] = [];
  const urls: string[] = [];
  let lastAnswer: string | undefined;
  for (const message of messages) {
    const text = messageText(message);
    for (const url of text.match(urlPattern) ?? []) urls.push(url);
    if (message.role === "user" && text.trim() !== "") requests.push(text);
    if (message.role === "assistant") {
      if (text.trim() !== "") lastAnswer = text;
      for (const call of toolCallsOf(message)) {
        tools.set(call.name, (tools.get(call.name) ?? 0) + 1);
        files.push(...pathsOf(call));
        for (const url of call.arguments.match(urlPattern) ?? []) urls.push(url);
      }
    }
    for (const result of toolResultsOf(message)) {
      if (!result.isError) continue;
      const name = calls.get(result.callId)?.name ?? "tool";
      errors.push(`${name}: ${firstLine(result.content, 160)}`);
    }
  }
  return { requests, tools, files: unique(files), errors: unique(errors), urls: unique(urls), lastAnswer };
}

function toolCounts(tools: ReadonlyMap<string, number>): string {
  if (tools.size === 0) return "none";
  return [...tools.entries()].map(([name, count]) => `${name} ×${count}`).join(", ");
}

function orNone(lines: readonly string[]): string[] {
  return lines.length === 0 ? ["None recorded."] : [...lines];
}

function section(heading: string, lines: readonly string[]): string[] {
  return [`## ${heading}`, ...lines, ""];
}

/**
 * The last link of the fallback chain: a summary extracted without any model (user requests, tools used with
 * counts, files touched, errors seen, URLs), with the same sections as a model's summary and the previous
 * summary kept verbatim below it. Deterministic and always succeeds.
 */
export function buildStaticSummary(input: StaticSummaryInput): string {
  const facts = extract([...input.messages, ...input.turnPrefix], input.calls);
  const prefix = extract(input.turnPrefix, input.calls);
  const latest = facts.requests.at(-1);
  const body = [
    "_Static summary: the summary model was unavailable, so this was extracted from the messages without a model._",
    "",
    ...section(summarySections[0], [
      latest === undefined
        ? "See the earlier summary below."
        : `Latest request in the summarized part: ${quote(latest)}`,
    ]),
    ...section(summarySections[1], ["None recorded (see the earlier summary below)."]),
    ...section(summarySections[2], [
      `- Requests (${facts.requests.length}):`,
      ...listed(facts.requests, quote).map((line) => `  ${line}`),
      `- Tools used: ${toolCounts(facts.tools)}`,
      ...(facts.lastAnswer === undefined ? [] : [`- Last answer given: ${quote(facts.lastAnswer)}`]),
    ]),
    ...section(summarySections[3], ["None recorded."]),
    ...section(
      summarySections[4],
      orNone(listed(facts.errors).map((line) => line.replace("- ", "- Error: "))),
    ),
    ...section(summarySections[5], ["None recorded."]),
    ...section(summarySections[6], ["None recorded."]),
    ...section(summarySections[7], ["Continue with the user's latest request."]),
    ...section(summarySections[8], [
      ...orNone([
        ...(facts.files.length === 0 ? [] : ["Files:", ...listed(facts.files)]),
        ...(facts.urls.length === 0 ? [] : ["URLs:", ...listed(facts.urls)]),
      ]),
    ]),
    ...(input.turnPrefix.length === 0
      ? []
      : section(turnPrefixSection, [
          `- Tool calls made so far: ${toolCounts(prefix.tools)}`,
          ...listed(prefix.files).map((line) => `  ${line}`),
          ...listed(prefix.errors).map((line) => `  ${line.replace("- ", "- Error: ")}`),
          ...(prefix.lastAnswer === undefined ? [] : [`- Last note: ${quote(prefix.lastAnswer)}`]),
        ])),
  ].join("\n");
  const previous = input.previousSummary?.trim();
  if (previous === undefined || previous === "") return sanitizeSummary(body);
  // The previous summary is kept verbatim; only if it alone would break the budget is its middle cut.
  const room = input.maxTokens - input.counter.countText(body) - 40;
  let kept = previous;
  for (let attempt = 0; attempt < 4; attempt += 1) {
    const tokens = input.counter.countText(kept);
    if (tokens <= room) break;
    const chars = Math.floor((kept.length * Math.max(room, 0) * 0.95) / tokens);
    kept = cutMiddle(previous, Math.max(200, Math.min(chars, kept.length - 1)));
  }
  return sanitizeSummary(`${body}\n## Earlier summary (kept verbatim)\n${kept}`);
}
