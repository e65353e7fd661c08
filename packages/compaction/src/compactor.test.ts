import { buildPrompt, WorkingMemory } from "@almanac/agent";
import { hasMark, type Message } from "@almanac/core";
import { toOpenAIMessages } from "@almanac/openai-wire";
import { countToolTokens, createTokenCounter } from "@almanac/tokenizer";
import { describe, expect, it } from "vitest";
import { FakeSummaryModel } from "../test/summary-fixtures.js";
import {
  assistant,
  createRandom,
  createTestClock,
  generatedText,
  toolRound,
  user,
  wirePairingProblems,
} from "../test/transcripts.js";
import type { CompactedBatch } from "./commit-compaction.js";
import type { CompactionEvent } from "./compaction-events.js";
import { compactionCounters, createCompactor } from "./compactor.js";
import type { CompactorOptions } from "./compactor-options.js";

const counter = createTokenCounter();
const systemPrompt = "You are Almanac, a helpful assistant.";
const tools = [{ name: "read_file", description: "Read a file", parameters: { type: "object" } }];

function conversation(turns: number, outputChars: number, seed = 1): Message[] {
  const clock = createTestClock();
  const random = createRandom(seed);
  const messages: Message[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push(user(`turn ${turn}: look at notes/${turn}.md`, clock));
    messages.push(
      ...toolRound(
        [
          {
            name: "read_file",
            arguments: { path: `notes/${turn}.md` },
            output: generatedText(random, outputChars),
          },
        ],
        clock,
      ),
    );
    messages.push(assistant(`notes/${turn}.md is summarized.`, clock));
  }
  return messages;
}

function setup(overrides: Partial<CompactorOptions> = {}) {
  const summaryModel = new FakeSummaryModel("summary");
  const events: CompactionEvent[] = [];
  const batches: CompactedBatch[] = [];
  const compactor = createCompactor({
    tokenCounter: counter,
    contextWindow: 8_192,
    maxOutputTokens: 1_024,
    summaryModel,
    journal: async (batch) => {
      batches.push(batch);
    },
    onEvent: (event) => events.push(event),
    clock: createTestClock(),
    ...overrides,
  });
  return { compactor, summaryModel, events, batches };
}

const input = { systemPrompt, tools };

describe("createCompactor: check", () => {
  it("counts what the agent would send the way providers do: messages with framing, tool specs, reply priming", () => {
    const { compactor } = setup();
    const memory = new WorkingMemory({
      messages: conversation(3, 400),
      summary: { text: "## Goal\nx", updatedAt: 1, compactions: 1 },
    });
    const expected =
      counter.countMessages(buildPrompt({ systemPrompt, memory })) + countToolTokens(counter, tools) + 3;
    expect(compactor.check(memory, input)).toMatchObject({ countedTokens: expected, ratio: 1, due: false });
  });

  it("corrects our count by the provider's reported prompt tokens: first taken as is, then smoothed, clamped", () => {
    const { compactor } = setup();
    const memory = new WorkingMemory({ messages: conversation(3, 400) });
    const first = compactor.check(memory, input);
    const usage = {
      promptTokens: Math.round(first.countedTokens * 1.5),
      completionTokens: 1,
      totalTokens: 1,
    };
    const second = compactor.check(memory, { ...input, lastUsage: usage });
    expect(second.ratio).toBeCloseTo(1.5, 2);
    expect(second.promptTokens).toBe(Math.ceil(second.countedTokens * second.ratio));
    expect(memory.counter(compactionCounters.tokenRatio)).toBeCloseTo(1.5, 2);
    // Clamped to 2, then half way from 1.5.
    const wild = { promptTokens: second.countedTokens * 10, completionTokens: 1, totalTokens: 1 };
    expect(compactor.check(memory, { ...input, lastUsage: wild }).ratio).toBeCloseTo(1.75, 5);
    // The same usage object again (a step that reported none) teaches nothing new.
    expect(compactor.check(memory, { ...input, lastUsage: wild }).ratio).toBeCloseTo(1.75, 5);
    // The last step of a turn is learnt through observe(); measure() learns nothing.
    compactor.observe(memory, { ...wild });
    expect(compactor.measure(memory, input).ratio).toBeCloseTo(1.875, 5);
    expect(compactor.measure(memory, input).ratio).toBeCloseTo(1.875, 5);
  });

  it("counts a tool set once for all the sessions' compactors, however many equal copies of it come in", () => {
    const toolTexts: string[] = [];
    const watched = {
      ...counter,
      countText: (text: string) => {
        if (text.startsWith('[{"type":"function"')) toolTexts.push(text);
        return counter.countText(text);
      },
    };
    const memory = new WorkingMemory({ messages: conversation(1, 100) });
    const counts = Array.from({ length: 3 }, () =>
      setup({ tokenCounter: watched }).compactor.check(memory, {
        systemPrompt,
        tools: tools.map((tool) => ({ ...tool })),
      }),
    ).map((check) => check.countedTokens);
    expect(new Set(counts).size).toBe(1);
    expect(toolTexts).toHaveLength(1);
  });

  it("says compaction is due once the corrected prompt is over the threshold", () => {
    const { compactor } = setup();
    const memory = new WorkingMemory({ messages: conversation(12, 2_000) });
    const check = compactor.check(memory, input);
    expect(check.threshold).toBe(Math.floor((8_192 - 1_024) * 0.6));
    expect(check.due).toBe(true);
  });
});

describe("createCompactor: compact", () => {
  it("stops after the cheap passes, with no model call, when they bring the prompt under the threshold", async () => {
    const { compactor, summaryModel, events } = setup();
    const memory = new WorkingMemory({ messages: conversation(6, 2_500) });
    expect(compactor.check(memory, input).due).toBe(true);
    const result = await compactor.compact(memory, { ...input, reason: "auto" });
    expect(result).toMatchObject({
      outcome: "compressed",
      summarizer: "none",
      llmCalls: 0,
      compactedMessages: 0,
    });
    expect(result.tokensAfter).toBeLessThanOrEqual(result.threshold);
    expect(summaryModel.requests).toHaveLength(0);
    expect(result.passes.map((pass) => pass.pass)).toEqual([
      "giant-output-cut",
      "dedupe",
      "tool-summaries",
      "argument-shortening",
    ]);
    expect(result.passes.find((pass) => pass.pass === "tool-summaries")?.tokensRemoved).toBeGreaterThan(0);
    expect(memory.messages.filter((message) => hasMark(message, "compressed")).length).toBeGreaterThan(0);
    expect(events.map((event) => event.type)).toEqual(["compaction-start", "compaction-end"]);
  });

  it("summarizes, journals the originals first, marks them compacted and replaces the summary", async () => {
    const { compactor, summaryModel, batches } = setup({ notifyUser: true, retainCompacted: 1_000 });
    const original = conversation(80, 1_500);
    const memory = new WorkingMemory({
      messages: original,
      summary: { text: "## Goal\nearlier", updatedAt: 1, compactions: 2 },
    });
    const result = await compactor.compact(memory, { ...input, reason: "auto" });
    expect(result).toMatchObject({ outcome: "summarized", summarizer: "model" });
    expect(result.llmCalls).toBe(summaryModel.requests.length);
    expect(result.tokensAfter).toBeLessThan(result.threshold);
    expect(result.notice).toMatch(/^Context compacted: [\d,]+ → [\d,]+ tokens\.$/);
    expect(memory.summary).toMatchObject({ compactions: 3 });
    expect(memory.summary?.text).toContain(`summary #${summaryModel.requests.length}`);
    expect(summaryModel.requests[0]?.messages.at(-1)?.content[0]).toMatchObject({
      text: expect.stringContaining("earlier"),
    });

    const compacted = memory.messages.filter((message) => hasMark(message, "compacted"));
    expect(compacted).toHaveLength(result.compactedMessages);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.messages.map((message) => message.id)).toEqual(compacted.map((message) => message.id));
    // The journal gets the content as it was, not the shortened one-liners.
    for (const message of batches[0]?.messages ?? []) {
      expect(message).toBe(original.find((candidate) => candidate.id === message.id));
    }
    expect(memory.messages).toHaveLength(original.length);
    expect(memory.counter(compactionCounters.count)).toBe(1);
    expect(memory.activeMessages().at(-3)?.role).toBe("assistant");
    expect(wirePairingProblems(toOpenAIMessages(buildPrompt({ systemPrompt, memory })))).toEqual([]);
  });

  it("journals the originals of outputs it shortened in an earlier compaction (it lives as long as the session)", async () => {
    const { compactor, batches } = setup();
    const original = conversation(6, 2_500);
    const memory = new WorkingMemory({ messages: original });
    expect((await compactor.compact(memory, { ...input, reason: "auto" })).outcome).toBe("compressed");
    const shortened = memory.messages.filter((message) => hasMark(message, "compressed"));
    expect(shortened.length).toBeGreaterThan(0);
    // Later turns, then a compaction that summarizes the shortened outputs.
    memory.append(...conversation(2, 100, 7));
    expect((await compactor.compact(memory, { ...input, reason: "command" })).outcome).toBe("summarized");
    const journaled = new Map(batches[0]?.messages.map((message) => [message.id, message]));
    for (const message of shortened) {
      expect(journaled.get(message.id)).toBe(original.find((candidate) => candidate.id === message.id));
    }
  });

  it("asks `originals` for messages shortened before it existed (a restart), and journals them in full", async () => {
    const original = conversation(6, 2_500);
    const memory = new WorkingMemory({ messages: original });
    await setup().compactor.compact(memory, { ...input, reason: "auto" });
    const shortened = memory.messages.filter((message) => hasMark(message, "compressed"));
    expect(shortened.length).toBeGreaterThan(0);
    const asked: string[][] = [];
    const transcript = new Map(original.map((message) => [message.id, message]));
    const reloaded = setup({
      originals: async (ids) => {
        asked.push([...ids]);
        return new Map(
          ids.flatMap((id) => (transcript.has(id) ? [[id, transcript.get(id) as Message]] : [])),
        );
      },
    });
    await reloaded.compactor.compact(memory, { ...input, reason: "command" });
    expect(asked.flat().sort()).toEqual(shortened.map((message) => message.id).sort());
    const journaled = new Map(reloaded.batches[0]?.messages.map((message) => [message.id, message]));
    for (const message of shortened) expect(journaled.get(message.id)).toBe(transcript.get(message.id));
  });

  it("journals a message as memory holds it when `originals` fails, and logs why", async () => {
    const memory = new WorkingMemory({ messages: conversation(6, 2_500) });
    await setup().compactor.compact(memory, { ...input, reason: "auto" });
    const { compactor, batches } = setup({
      originals: async () => {
        throw new Error("transcript unreadable");
      },
    });
    await compactor.compact(memory, { ...input, reason: "command" });
    expect(batches[0]?.messages.some((message) => hasMark(message, "compressed"))).toBe(true);
  });

  it("marks nothing when the journal fails, and says so in the end event", async () => {
    const { compactor, events } = setup({
      journal: async () => {
        throw new Error("disk full");
      },
    });
    const memory = new WorkingMemory({ messages: conversation(80, 1_500) });
    const before = memory.messages;
    await expect(compactor.compact(memory, { ...input, reason: "auto" })).rejects.toMatchObject({
      code: "compaction.journal_failed",
    });
    expect(memory.messages).toBe(before);
    expect(memory.summary).toBeUndefined();
    expect(events.at(-1)).toMatchObject({
      type: "compaction-end",
      outcome: "failed",
      error: expect.stringContaining("disk full"),
    });
  });

  it("summarizes on /compact even when the cheap passes would have been enough, and passes the focus", async () => {
    const { compactor, summaryModel } = setup();
    const memory = new WorkingMemory({ messages: conversation(6, 2_500) });
    const result = await compactor.compact(memory, { ...input, reason: "command", focus: "the notes" });
    expect(result.outcome).toBe("summarized");
    expect(summaryModel.requests[0]?.messages.at(-1)?.content[0]).toMatchObject({
      text: expect.stringContaining("focus on: the notes"),
    });
  });

  it("drops the oldest compacted messages beyond the retention, never splitting a call from its result", async () => {
    const { compactor, batches } = setup({ retainCompacted: 5 });
    const memory = new WorkingMemory({ messages: conversation(30, 1_500) });
    const result = await compactor.compact(memory, { ...input, reason: "command" });
    const kept = memory.messages.filter((message) => hasMark(message, "compacted"));
    expect(result.droppedMessages).toBeGreaterThan(0);
    expect(kept.length).toBeGreaterThanOrEqual(5);
    expect(kept.length).toBeLessThanOrEqual(6);
    expect(memory.messages[0]?.role).not.toBe("tool");
    const all = new Set([...memory.messages, ...(batches[0]?.messages ?? [])].map((message) => message.id));
    expect(all.size).toBe(30 * 4);
  });

  it("keeps every compacted message when there is no journal to have recorded them", async () => {
    const { compactor } = setup({ journal: undefined, retainCompacted: 0 });
    const memory = new WorkingMemory({ messages: conversation(30, 1_500) });
    await compactor.compact(memory, { ...input, reason: "command" });
    expect(memory.messages).toHaveLength(30 * 4);
  });
});

describe("createCompactor: anti-thrash", () => {
  // A system prompt alone over the threshold: no compaction can get under it.
  const hugeSystem = { systemPrompt: "rule ".repeat(5_000), tools };
  /** Two more short turns, so the next compaction has a little (but not much) to summarize. */
  const moreTurns = (memory: WorkingMemory, seed: number): void => {
    for (const message of conversation(2, 300, seed)) memory.append(message);
  };

  it("counts a strike per summary that leaves the prompt over the threshold without making room, and pauses after the limit", async () => {
    const { compactor } = setup({ maxStrikes: 2 });
    const memory = new WorkingMemory({ messages: conversation(10, 300) });
    const first = await compactor.compact(memory, { ...hugeSystem, reason: "auto" });
    expect(first.outcome).toBe("summarized");
    expect(first.tokensBefore - first.tokensAfter).toBeLessThan(first.threshold * 0.1);
    expect(memory.counter(compactionCounters.strikes)).toBe(1);
    expect(compactor.check(memory, hugeSystem).suspended).toBe(false);
    moreTurns(memory, 2);
    await compactor.compact(memory, { ...hugeSystem, reason: "auto" });
    expect(compactor.check(memory, hugeSystem)).toMatchObject({ due: true, strikes: 2, suspended: true });
    expect(compactor.state(memory)).toEqual({ strikes: 2, maxStrikes: 2, paused: true });
  });

  it("counts no strike when there was nothing to summarize, or when the summary made room", async () => {
    const { compactor } = setup({ maxStrikes: 1 });
    const short = new WorkingMemory({ messages: conversation(2, 300) });
    const nothing = await compactor.compact(short, { ...hugeSystem, reason: "auto" });
    expect(nothing.outcome).not.toBe("summarized");
    expect(short.counter(compactionCounters.strikes)).toBe(0);

    const long = new WorkingMemory({ messages: conversation(30, 1_500) });
    const roomy = await compactor.compact(long, { ...hugeSystem, reason: "auto" });
    expect(roomy).toMatchObject({ outcome: "summarized", strikes: 0 });
    expect(roomy.tokensAfter).toBeGreaterThan(roomy.threshold);
    expect(compactor.state(long).paused).toBe(false);
  });

  it("resumes once the context is back under the threshold, and /compact resets the strikes", async () => {
    const { compactor } = setup({ maxStrikes: 1 });
    const memory = new WorkingMemory({ messages: conversation(10, 300) });
    await compactor.compact(memory, { ...hugeSystem, reason: "auto" });
    expect(compactor.check(memory, hugeSystem).suspended).toBe(true);
    expect(compactor.check(memory, input)).toMatchObject({ due: false, strikes: 0 });
    expect(memory.counter(compactionCounters.strikes)).toBe(0);

    moreTurns(memory, 3);
    await compactor.compact(memory, { ...hugeSystem, reason: "auto" });
    expect(compactor.check(memory, hugeSystem).suspended).toBe(true);
    await compactor.compact(memory, { ...hugeSystem, reason: "command" });
    expect(memory.counter(compactionCounters.strikes)).toBe(0);
  });

  it("reports the limit a request may not pass: the usable window less a margin", () => {
    const { compactor } = setup();
    const check = compactor.check(new WorkingMemory({ messages: [] }), hugeSystem);
    expect(check.limit).toBe(Math.floor((8_192 - 1_024) * 0.95));
    expect(check.overLimit).toBe(false);
    expect(
      compactor.check(new WorkingMemory({ messages: [] }), {
        ...hugeSystem,
        systemPrompt: "rule ".repeat(8_000),
      }).overLimit,
    ).toBe(true);
  });
});
