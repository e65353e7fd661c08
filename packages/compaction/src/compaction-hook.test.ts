import { type BeforeModelCallContext, WorkingMemory } from "@almanac/agent";
import { hasMark, type Message, ProviderError } from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { describe, expect, it } from "vitest";
import { FakeSummaryModel } from "../test/summary-fixtures.js";
import {
  assistant,
  createRandom,
  createTestClock,
  generatedText,
  toolRound,
  user,
} from "../test/transcripts.js";
import type { CompactionEvent } from "./compaction-events.js";
import { compactionCounters, createCompactor } from "./compactor.js";

const counter = createTokenCounter();
const systemPrompt = "You are Almanac.";

function longHistory(turns: number): Message[] {
  const clock = createTestClock();
  const random = createRandom(9);
  const messages: Message[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push(user(`turn ${turn}`, clock));
    messages.push(
      ...toolRound(
        [{ name: "read_file", arguments: { path: `${turn}.md` }, output: generatedText(random, 1_500) }],
        clock,
      ),
    );
    messages.push(assistant("ok", clock));
  }
  return messages;
}

function setup(summaryModel = new FakeSummaryModel("summary")) {
  const events: CompactionEvent[] = [];
  const compactor = createCompactor({
    tokenCounter: counter,
    contextWindow: 8_192,
    maxOutputTokens: 1_024,
    summaryModel,
    onEvent: (event) => events.push(event),
    clock: createTestClock(),
  });
  const step = (context: BeforeModelCallContext) => compactor.beforeModelCall(context);
  return { compactor, step, events };
}

/** Memory whose store refuses every rewrite (a journal-less compactor can still fail here). */
class RefusingMemory extends WorkingMemory {
  override replaceMessages(): void {
    throw new ProviderError("test.failure", "store down", { isRetryable: true });
  }
}

const context = (memory: WorkingMemory): BeforeModelCallContext => ({
  memory,
  iteration: 1,
  systemPrompt,
  tools: [],
});

describe("the compaction hook", () => {
  it("does nothing while the prompt is under the threshold", async () => {
    const { step, events } = setup();
    const memory = new WorkingMemory({ messages: longHistory(2) });
    const before = memory.messages;
    await step(context(memory));
    expect(memory.messages).toBe(before);
    expect(events).toEqual([]);
  });

  it("compacts before the step once the prompt is over the threshold", async () => {
    const { step, events, compactor } = setup();
    const memory = new WorkingMemory({ messages: longHistory(80) });
    await step(context(memory));
    expect(events.map((event) => event.type)).toEqual(["compaction-start", "compaction-end"]);
    expect(compactor.check(memory, { systemPrompt, tools: [] }).due).toBe(false);
  });

  it("skips automatic compaction while paused by strikes, as long as the request still fits the window", async () => {
    const { step, events, compactor } = setup();
    let turns = 10;
    const paused = () =>
      new WorkingMemory({ messages: longHistory(turns), counters: { [compactionCounters.strikes]: 3 } });
    while (!compactor.check(paused(), { systemPrompt, tools: [] }).due) turns += 1;
    const memory = paused();
    expect(compactor.check(memory, { systemPrompt, tools: [] })).toMatchObject({
      suspended: true,
      overLimit: false,
    });
    await step(context(memory));
    expect(events).toEqual([]);
    expect(memory.messages.some((message) => hasMark(message, "compacted"))).toBe(false);
  });

  it("still compacts a paused session before a request that would not fit the window", async () => {
    const { step, events, compactor } = setup();
    const memory = new WorkingMemory({
      messages: longHistory(80),
      counters: { [compactionCounters.strikes]: 3 },
    });
    expect(compactor.check(memory, { systemPrompt, tools: [] }).overLimit).toBe(true);
    await step(context(memory));
    expect(events).toContainEqual(
      expect.objectContaining({ type: "compaction-end", reason: "overflow", outcome: "summarized" }),
    );
    expect(compactor.check(memory, { systemPrompt, tools: [] }).overLimit).toBe(false);
  });

  it("never fails the step when compaction fails; the failure is reported as an event", async () => {
    const { step, events } = setup();
    const memory = new RefusingMemory({ messages: longHistory(80) });
    await expect(step(context(memory))).resolves.toBeUndefined();
    expect(events.at(-1)).toMatchObject({
      type: "compaction-end",
      outcome: "failed",
      error: "test.failure: store down",
    });
  });

  it("summarizes the early rounds of one huge turn as a turn prefix and keeps the request verbatim", async () => {
    const summaryModel = new FakeSummaryModel("summary");
    const { step, events } = setup(summaryModel);
    const clock = createTestClock();
    const random = createRandom(4);
    const request = user("Audit every file under src/ and report problems.", clock);
    const messages: Message[] = [request];
    for (let round = 0; round < 80; round += 1) {
      messages.push(
        ...toolRound(
          [{ name: "read_file", arguments: { path: `src/${round}.ts` }, output: generatedText(random, 900) }],
          clock,
        ),
      );
    }
    const memory = new WorkingMemory({ messages });
    await step(context(memory));
    expect(events.at(-1)).toMatchObject({ outcome: "summarized" });
    const end = events.at(-1);
    expect(end && "turnPrefixMessages" in end ? end.turnPrefixMessages : 0).toBeGreaterThan(0);
    expect(memory.activeMessages()[0]).toBe(request);
    expect(memory.summary?.text).toContain("## Current request so far");
    expect(summaryModel.requests[0]?.messages.at(-1)?.content[0]).toMatchObject({
      text: expect.stringContaining("<current-request-so-far>"),
    });
  });
});
