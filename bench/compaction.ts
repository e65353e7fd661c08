/**
 * Context compaction on a generated tool-heavy conversation (1,000 turns, tool outputs of 2–20 KB, 16K window):
 * tokens removed by each cheap pass, how much of the summarizer's input the passes removed before the model
 * call, summary calls per 1,000 turns, peak prompt versus threshold, and time spent in the hook per step.
 * Then the hook's cost on a session of 1,000 messages growing to 1,500 where no compaction is due.
 * Run: npx tsx bench/compaction.ts [--json <file>]   (not part of the test run; models are in-process fakes,
 * no network)
 */
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createAgent, createToolkit, WorkingMemory } from "@almanac/agent";
import {
  type CompactionEndEvent,
  type CompactionEvent,
  createCompactor,
  runWithOverflowRecovery,
} from "@almanac/compaction";
import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type ContentBlock,
  createMessage,
  messageText,
  ProviderError,
  type TokenCounter,
} from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { createReportTool, createSaveNoteTool } from "../packages/compaction/test/generated-tools.js";
import { requestHasTurnPrefix, validSummary } from "../packages/compaction/test/summary-fixtures.js";
import { createRandom, generatedText } from "../packages/compaction/test/transcripts.js";
import { Figures, jsonOption } from "./figures.js";
import { percentile } from "./sample-stats.js";

const { values } = parseArgs({ options: { ...jsonOption } });
const figures = new Figures(values.json);

const TURNS = 1_000;
const WINDOW = 16_384;
const OUTPUT_RESERVE = 2_048;
const SYSTEM_PROMPT = "You are Almanac. Use fetch_report to answer.";

const ms = (value: number): string => `${value.toFixed(3)} ms`;
const int = (value: number): string => Math.round(value).toLocaleString("en-US");

/**
 * The main model, in-process: counts the prompt like a strict provider (messages + tools JSON), refuses one
 * over the window with `llm.context_length`, and answers with a tool call after a user message, text otherwise.
 */
function createMainModel(counter: TokenCounter, peak: { tokens: number; overflows: number }): ChatModel {
  let calls = 0;
  const random = createRandom(99);
  return {
    modelName: "bench-main",
    contextWindow: WINDOW,
    async complete(request: ChatRequest): Promise<ChatResponse> {
      const tools = (request.tools ?? []).map((tool) => ({ type: "function", function: tool }));
      const promptTokens =
        counter.countMessages(request.messages) +
        (tools.length === 0 ? 0 : counter.countText(JSON.stringify(tools)));
      peak.tokens = Math.max(peak.tokens, promptTokens);
      if (promptTokens > WINDOW) {
        peak.overflows += 1;
        throw new ProviderError("llm.context_length", `prompt of ${promptTokens} tokens`, {
          isRetryable: false,
        });
      }
      calls += 1;
      const last = request.messages.at(-1);
      // Every 5th request the model saves a long note: its text travels as a tool-call argument.
      const call =
        calls % 5 === 0
          ? {
              name: "save_note",
              arguments: { path: `notes/${calls}.md`, content: generatedText(random, 3_000) },
            }
          : { name: "fetch_report", arguments: { id: calls } };
      const content: ContentBlock[] =
        last?.role === "user"
          ? [
              {
                type: "tool_call",
                id: `call_${calls}`,
                name: call.name,
                arguments: JSON.stringify(call.arguments),
              },
            ]
          : [{ type: "text", text: "Done." }];
      return {
        message: createMessage({ role: "assistant", timestamp: 0, content }),
        finishReason: last?.role === "user" ? "tool_calls" : "stop",
        usage: { promptTokens, completionTokens: 5, totalTokens: promptTokens + 5 },
        model: "bench-main",
        attempts: 1,
      };
    },
    stream() {
      throw new Error("not used");
    },
  };
}

/** The summary model, in-process: records how many tokens of material it was sent and answers a valid summary. */
function createSummaryModel(counter: TokenCounter, sent: number[]): ChatModel {
  return {
    modelName: "bench-summary",
    contextWindow: WINDOW,
    async complete(request: ChatRequest): Promise<ChatResponse> {
      const material = messageText(request.messages.at(-1) ?? createMessage({ role: "user", content: "" }));
      const inner = /<messages>\n([\s\S]*)\n<\/messages>/.exec(material)?.[1] ?? "";
      const prefix =
        /<current-request-so-far>\n([\s\S]*)\n<\/current-request-so-far>/.exec(material)?.[1] ?? "";
      sent.push(counter.countText(inner) + counter.countText(prefix));
      return {
        message: createMessage({
          role: "assistant",
          timestamp: 0,
          content: validSummary(`- merged summary #${sent.length}`, requestHasTurnPrefix(material)),
        }),
        finishReason: "stop",
        usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
        model: "bench-summary",
        attempts: 1,
      };
    },
    stream() {
      throw new Error("not used");
    },
  };
}

async function longConversation(): Promise<void> {
  const counter = createTokenCounter();
  const providerCounter = createTokenCounter();
  const peak = { tokens: 0, overflows: 0 };
  const sent: number[] = [];
  const events: CompactionEvent[] = [];
  const originalsPerSummary: number[] = [];
  const memory = new WorkingMemory();
  let now = 1_700_000_000_000;
  const clock = () => ++now;
  const compactor = createCompactor({
    tokenCounter: counter,
    contextWindow: WINDOW,
    maxOutputTokens: OUTPUT_RESERVE,
    summaryModel: createSummaryModel(counter, sent),
    journal: async (batch) => {
      // The journal gets each compacted message as it was appended, before any cheap pass shortened it.
      originalsPerSummary.push(counter.countMessages(batch.messages));
    },
    onEvent: (event) => events.push(event),
    clock,
  });
  const hookTimes: Array<{ ms: number; compaction: "none" | "cheap" | "summary" }> = [];
  let eventsBefore = 0;
  // The steps run in the listed order: a stopwatch before and after the compactor's own step.
  let hookStart = 0;
  const startWatch = () => {
    hookStart = performance.now();
  };
  const stopWatch = () => {
    const time = performance.now() - hookStart;
    const ends = events
      .slice(eventsBefore)
      .filter((event): event is CompactionEndEvent => event.type === "compaction-end");
    eventsBefore = events.length;
    const kind =
      ends.length === 0 ? "none" : ends.some((end) => end.outcome === "summarized") ? "summary" : "cheap";
    hookTimes.push({ ms: time, compaction: kind });
  };
  const agent = createAgent({
    model: createMainModel(providerCounter, peak),
    toolkit: createToolkit([createReportTool(42), createSaveNoteTool()]),
    beforeModelCall: [startWatch, compactor.beforeModelCall, stopWatch],
    systemPrompt: SYSTEM_PROMPT,
    clock,
  });

  const started = performance.now();
  for (let turn = 1; turn <= TURNS; turn += 1) {
    const input = createMessage({
      role: "user",
      timestamp: clock(),
      content: `Turn ${turn}: next report? 请总结。`,
    });
    await runWithOverflowRecovery(
      () => agent.run({ memory, input }),
      () => compactor.compact(memory, { systemPrompt: SYSTEM_PROMPT, tools: [], reason: "overflow" }),
    );
  }
  const elapsed = performance.now() - started;

  const ends = events.filter((event): event is CompactionEndEvent => event.type === "compaction-end");
  const passTotals = new Map<string, number>();
  for (const end of ends) {
    if (!("passes" in end)) continue;
    for (const pass of end.passes)
      passTotals.set(pass.pass, (passTotals.get(pass.pass) ?? 0) + pass.tokensRemoved);
  }
  const summarized = ends.filter((end) => end.outcome === "summarized");
  const original = originalsPerSummary.reduce((a, b) => a + b, 0);
  const sentTotal = sent.reduce((a, b) => a + b, 0);
  const threshold = compactor.threshold.threshold;

  console.log(
    `\nLong conversation: ${TURNS} turns, tool outputs 2–20 KB, window ${int(WINDOW)}, output reserve ${int(OUTPUT_RESERVE)}`,
  );
  console.log(
    `threshold ${int(threshold)} tokens (${compactor.threshold.share * 100}% of ${int(compactor.threshold.usableWindow)} usable)\n`,
  );
  console.log("| cheap pass | tokens removed (all compactions) |");
  console.log("|---|---|");
  for (const [pass, tokens] of passTotals) console.log(`| ${pass} | ${int(tokens)} |`);
  console.log("");
  console.log("| measurement | value |");
  console.log("|---|---|");
  console.log(
    `| compactions: cheap passes only / summarized | ${ends.length - summarized.length} / ${summarized.length} |`,
  );
  console.log(`| summary model calls per 1,000 turns | ${int((sent.length * 1_000) / TURNS)} |`);
  console.log(`| summarizer input: original tokens of the compacted messages | ${int(original)} |`);
  console.log(`| summarizer input: tokens actually sent (after the cheap passes) | ${int(sentTotal)} |`);
  console.log(
    `| removed before the summary call | ${original === 0 ? "n/a" : `${((1 - sentTotal / original) * 100).toFixed(1)}%`} |`,
  );
  console.log(
    `| peak prompt (provider count) vs threshold vs window | ${int(peak.tokens)} / ${int(threshold)} / ${int(WINDOW)} |`,
  );
  console.log(`| context-length refusals | ${peak.overflows} |`);
  figures.add("summary-calls-per-1000-turns", (sent.length * 1_000) / TURNS, "calls");
  figures.add("removed-before-summary", original === 0 ? Number.NaN : (1 - sentTotal / original) * 100, "%", {
    atLeast: 40,
  });
  figures.add("peak-prompt", peak.tokens, "tokens");
  figures.add("context-length-refusals", peak.overflows, "refusals", { below: 1 });
  for (const kind of ["none", "cheap", "summary"] as const) {
    const times = hookTimes.filter((entry) => entry.compaction === kind).map((entry) => entry.ms);
    if (times.length === 0) continue;
    console.log(
      `| hook per step, ${kind === "none" ? "no compaction" : kind === "cheap" ? "cheap passes only" : "summarizing"} (${times.length} steps) | p50 ${ms(percentile(times, 50))}, p99 ${ms(percentile(times, 99))}, max ${ms(Math.max(...times))} |`,
    );
    figures.add(`hook-${kind}-p50`, percentile(times, 50), "ms");
    figures.add(`hook-${kind}-p99`, percentile(times, 99), "ms");
  }
  console.log(`| wall time, whole run | ${(elapsed / 1_000).toFixed(1)} s |`);
}

/** The hook on a 1,000-message session under the threshold: append one message, run the check. */
async function idleHook(): Promise<void> {
  const HISTORY = 1_000;
  const ROUNDS = 500;
  const counter = createTokenCounter();
  const compactor = createCompactor({
    tokenCounter: counter,
    contextWindow: 400_000,
    maxOutputTokens: 16_000,
    summaryModel: createSummaryModel(counter, []),
  });
  const random = createRandom(7);
  const memory = new WorkingMemory({
    messages: Array.from({ length: HISTORY }, (_, index) =>
      createMessage({
        role: index % 2 === 0 ? "user" : "assistant",
        timestamp: index,
        content: generatedText(random, 400),
      }),
    ),
  });
  const tools = createToolkit([]).specs();
  const context = { memory, iteration: 1, systemPrompt: SYSTEM_PROMPT, tools };
  await compactor.beforeModelCall(context); // the history was counted before the new message arrived
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    memory.append(
      createMessage({ role: "user", timestamp: HISTORY + round, content: generatedText(random, 400) }),
    );
    const start = performance.now();
    await compactor.beforeModelCall(context);
    times.push(performance.now() - start);
  }
  const check = compactor.check(memory, context);
  console.log(
    `\nHook with no compaction due: ${int(memory.messages.length)}-message session, ${int(check.promptTokens)} of ${int(check.threshold)} tokens`,
  );
  console.log(
    `| per step (append one message, then the hook) | p50 ${ms(percentile(times, 50))}, p99 ${ms(percentile(times, 99))} |`,
  );
  figures.add("hook-nothing-due-long-session-p50", percentile(times, 50), "ms");
  figures.add("hook-nothing-due-long-session-p99", percentile(times, 99), "ms", { below: 5 });
}

await longConversation();
await idleHook();
console.log(`\nnode ${process.version}; counter ${createTokenCounter().method}`);
figures.write();
