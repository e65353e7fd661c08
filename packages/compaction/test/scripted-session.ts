import { createAgent, createToolkit, WorkingMemory } from "@almanac/agent";
import type { Message } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { type RecordedChatRequest, type ScriptedLlm, type ScriptStep, script } from "@almanac/testkit";
import { createTokenCounter } from "@almanac/tokenizer";
import { z } from "zod";
import type { CompactedBatch } from "../src/commit-compaction.js";
import type { CompactionEvent } from "../src/compaction-events.js";
import { type Compactor, createCompactor } from "../src/compactor.js";
import type { CompactorOptions } from "../src/compactor-options.js";
import { summaryInstructionsTitle } from "../src/summary-prompt.js";
import { createReportTool } from "./generated-tools.js";
import { requestHasTurnPrefix, validSummary } from "./summary-fixtures.js";

/** Model name the compactor's summary model sends to the scripted server. */
export const summaryModelName = "summary-model";
/** Model name of the main (chat) model, also the compactor's fallback. */
export const mainModelName = "main-model";

/** Working memory that records the id of every message ever appended (the test's ground truth). */
export class RecordingMemory extends WorkingMemory {
  readonly appended: string[] = [];
  /** Each appended message as it was appended (before any compaction touched it). */
  readonly originals = new Map<string, Message>();

  override append(...messages: readonly Message[]): void {
    for (const message of messages) {
      this.appended.push(message.id);
      this.originals.set(message.id, message);
    }
    super.append(...messages);
  }
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => z.object({ text: z.string() }).safeParse(part).data?.text ?? "")
    .join("");
}

/** True for a summary request (its system message starts with the summarizer's instructions). */
export function isSummaryRequest(request: RecordedChatRequest): boolean {
  return textOf(request.messages[0]?.content).startsWith(summaryInstructionsTitle);
}

/** A valid summary step for a summary request, merging a counter so tests can follow it. */
export function summaryStep(request: RecordedChatRequest, note: string): ScriptStep {
  const material = textOf(request.messages.at(-1)?.content);
  return script.text(validSummary(note, requestHasTurnPrefix(material)));
}

/** What the scripted server saw, collected by {@link routeRequests}. */
export interface RouteLog {
  summaryRequests: number;
  mainRequests: number;
  /** Main requests after the first summary that did not carry the summary block. */
  mainWithoutSummary: number;
}

/**
 * Answers chat requests when no step is queued: summary requests from `summaryReplies[model]` (then a valid
 * summary), main requests with a tool call when the last message is the user's and text otherwise.
 * Pass the `log` of an earlier call to keep counting after `llm.reset()`.
 */
export function routeRequests(
  llm: ScriptedLlm,
  summaryReplies: Partial<Record<string, ScriptStep[]>> = {},
  log: RouteLog = { summaryRequests: 0, mainRequests: 0, mainWithoutSummary: 0 },
): RouteLog {
  let reportId = 0;
  llm.setFallback((request) => {
    if (isSummaryRequest(request)) {
      log.summaryRequests += 1;
      return (
        summaryReplies[request.model]?.shift() ??
        summaryStep(request, `- merged summary #${log.summaryRequests}`)
      );
    }
    log.mainRequests += 1;
    const system = textOf(request.messages[0]?.content);
    if (log.summaryRequests > 0 && !system.includes("<conversation-summary>")) log.mainWithoutSummary += 1;
    if (request.messages.at(-1)?.role === "user") {
      reportId += 1;
      return script.toolCalls([{ name: "fetch_report", arguments: { id: reportId } }]);
    }
    return script.text("Done.");
  });
  return log;
}

/** An agent wired to the scripted server with a compactor attached, plus what the test needs to watch. */
export function createScriptedSession(llm: ScriptedLlm, overrides: Partial<CompactorOptions> = {}) {
  const counter = createTokenCounter();
  const model = (name: string, timeoutMs = 5_000) =>
    createOpenAIChatModel({
      baseURL: llm.baseURL,
      apiKey: "",
      model: name,
      maxRetries: 0,
      timeoutMs,
      contextWindow: 16_384,
    });
  const mainModel = model(mainModelName);
  const batches: CompactedBatch[] = [];
  const events: CompactionEvent[] = [];
  let now = 1_700_000_000_000;
  const clock = () => {
    now += 1;
    return now;
  };
  const compactor: Compactor = createCompactor({
    tokenCounter: counter,
    contextWindow: 16_384,
    maxOutputTokens: 2_048,
    summaryModel: model(summaryModelName),
    fallbackModel: mainModel,
    journal: async (batch) => {
      batches.push(batch);
    },
    onEvent: (event) => events.push(event),
    notifyUser: true,
    clock,
    ...overrides,
  });
  const agent = createAgent({
    model: mainModel,
    toolkit: createToolkit([createReportTool()]),
    beforeModelCall: [compactor.beforeModelCall],
    systemPrompt: "You are Almanac. Use fetch_report to answer.",
    clock,
  });
  return { agent, compactor, counter, batches, events, clock, mainModel };
}
