import { buildPrompt, WorkingMemory } from "@almanac/agent";
import { hasMark, type Message, ProviderError } from "@almanac/core";
import { toOpenAIMessages } from "@almanac/openai-wire";
import { createTokenCounter } from "@almanac/tokenizer";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FakeSummaryModel } from "../test/summary-fixtures.js";
import {
  assistant,
  createRandom,
  createTestClock,
  generatedText,
  type RoundCall,
  toolRound,
  user,
  wirePairingProblems,
} from "../test/transcripts.js";
import type { CompactedBatch, CompactionReason } from "./commit-compaction.js";
import { createCompactor } from "./compactor.js";

const counter = createTokenCounter();
const systemPrompt = "You are Almanac.";
const tools = [{ name: "read_file", description: "Read a file", parameters: { type: "object" } }];

const textSpec = fc.record({ seed: fc.integer(), chars: fc.integer({ min: 5, max: 6_000 }) });
const callSpec = fc.record({ output: textSpec, isError: fc.boolean(), repeatPrevious: fc.boolean() });
const turnSpec = fc.record({
  request: fc.record({ seed: fc.integer(), chars: fc.integer({ min: 5, max: 400 }) }),
  rounds: fc.array(fc.array(callSpec, { minLength: 1, maxLength: 3 }), { maxLength: 3 }),
  answered: fc.boolean(),
});
const scenarioSpec = fc.record({
  turns: fc.array(turnSpec, { minLength: 1, maxLength: 30 }),
  window: fc.constantFrom(4_096, 8_192, 16_384),
  reason: fc.constantFrom<CompactionReason>("auto", "command", "overflow"),
  summaryFails: fc.boolean(),
  hasSummary: fc.boolean(),
});
type Scenario = typeof scenarioSpec extends fc.Arbitrary<infer T> ? T : never;

/** Builds the transcript: only the last turn may be unfinished (ending with tool results). */
function transcript(scenario: Scenario): Message[] {
  const clock = createTestClock();
  const messages: Message[] = [];
  let previousOutput = "first output";
  for (const [index, turn] of scenario.turns.entries()) {
    messages.push(user(generatedText(createRandom(turn.request.seed), turn.request.chars), clock));
    for (const round of turn.rounds) {
      const calls: RoundCall[] = round.map((call) => {
        const output = call.repeatPrevious
          ? previousOutput
          : generatedText(createRandom(call.output.seed), call.output.chars);
        previousOutput = output;
        return { name: "read_file", arguments: { path: `notes/${index}.md` }, output, isError: call.isError };
      });
      messages.push(...toolRound(calls, clock));
    }
    if (turn.answered || index < scenario.turns.length - 1) messages.push(assistant("好的, done.", clock));
  }
  return messages;
}

async function compactScenario(scenario: Scenario) {
  const batches: CompactedBatch[] = [];
  const failure = new ProviderError("llm.server", "down", { isRetryable: true });
  const compactor = createCompactor({
    tokenCounter: counter,
    contextWindow: scenario.window,
    maxOutputTokens: 512,
    summaryModel: new FakeSummaryModel(
      "summary",
      undefined,
      scenario.summaryFails ? [failure, failure, failure] : [],
    ),
    fallbackModel: new FakeSummaryModel(
      "main",
      undefined,
      scenario.summaryFails ? [failure, failure, failure] : [],
    ),
    journal: async (batch) => {
      batches.push(batch);
    },
    retainCompacted: 10,
    clock: createTestClock(),
  });
  const original = transcript(scenario);
  const memory = new WorkingMemory({
    messages: original,
    ...(scenario.hasSummary
      ? { summary: { text: "## Goal\n继续 the migration", updatedAt: 1, compactions: 1 } }
      : {}),
  });
  const result = await compactor.compact(memory, { systemPrompt, tools, reason: scenario.reason });
  return { memory, original, batches, result };
}

describe("compaction over random transcripts", () => {
  it("never leaves a tool call without its result or a result without its call in the prompt", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioSpec, async (scenario) => {
        const { memory } = await compactScenario(scenario);
        const wire = toOpenAIMessages(buildPrompt({ systemPrompt, memory }));
        expect(wirePairingProblems(wire)).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });

  it("always keeps the latest user message in the prompt, word for word", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioSpec, async (scenario) => {
        const { memory, original } = await compactScenario(scenario);
        const latest = original.findLast((message) => message.role === "user");
        expect(memory.activeMessages()).toContain(latest);
      }),
      { numRuns: 60 },
    );
  });

  it("brings the prompt under the threshold (requests here are small, so that is always possible)", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioSpec, async (scenario) => {
        const { result } = await compactScenario(scenario);
        expect(result.tokensAfter).toBeLessThanOrEqual(result.threshold);
      }),
      { numRuns: 60 },
    );
  });

  it("loses no message: each one is still in memory or was journaled, with a summary for the compacted", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioSpec, async (scenario) => {
        const { memory, original, batches } = await compactScenario(scenario);
        const accounted = new Set([
          ...memory.messages.map((message) => message.id),
          ...batches.flatMap((batch) => batch.messages.map((message) => message.id)),
        ]);
        for (const message of original) expect(accounted.has(message.id)).toBe(true);
        if (memory.messages.some((message) => hasMark(message, "compacted"))) {
          expect(memory.summary?.text.length ?? 0).toBeGreaterThan(0);
        }
        for (const batch of batches) expect(batch.summary).toBe(memory.summary?.text);
      }),
      { numRuns: 60 },
    );
  });
});
