import { buildPrompt, WorkingMemory } from "@almanac/agent";
import { type Message, type TokenCounter, type ToolSpec, withMark } from "@almanac/core";
import { countToolTokens, createTokenCounter } from "@almanac/tokenizer";
import { describe, expect, it } from "vitest";
import { assistant, createTestClock, toolRound, user } from "../test/transcripts.js";
import { createContextMeter } from "./context-check.js";

const counter = createTokenCounter();
const systemPrompt = "You are Almanac.";
const tools = [{ name: "read_file", description: "Read a file", parameters: { type: "object" } }];

/** The count from scratch: every message of the prompt with its framing, the tools and the reply priming. */
function recount(memory: WorkingMemory, messages: readonly Message[] = memory.activeMessages()): number {
  const prompt = buildPrompt({
    systemPrompt,
    memory: { summary: memory.summary, activeMessages: () => messages },
  });
  return 3 + countToolTokens(counter, tools) + counter.countMessages(prompt);
}

describe("createContextMeter", () => {
  it("counts what buildPrompt sends while a session appends, marks, summarizes and measures other lists", () => {
    const clock = createTestClock();
    const memory = new WorkingMemory();
    const meter = createContextMeter(counter);
    const measured = (messages?: readonly Message[]) =>
      meter.measure(memory, { systemPrompt, tools }, messages).countedTokens;

    for (let turn = 0; turn < 6; turn += 1) {
      memory.append(user(`turn ${turn}: what is in notes/${turn}.md?`, clock));
      expect(measured()).toBe(recount(memory));
      memory.append(
        ...toolRound(
          [{ name: "read_file", arguments: { path: `notes/${turn}.md` }, output: "x ".repeat(40 * turn) }],
          clock,
        ),
      );
      memory.append(assistant(`notes/${turn}.md says ${"y ".repeat(turn * 7)}`, clock));
      expect(measured()).toBe(recount(memory));
    }

    // A message replaced by a copy at the same place (same length, other objects) is counted again.
    const shorter = memory.messages.map((message, index) =>
      index === 4 ? Object.freeze({ ...message, content: [{ type: "text" as const, text: "hi" }] }) : message,
    );
    memory.replaceMessages(shorter as Message[]);
    expect(measured()).toBe(recount(memory));

    // Compaction marks a prefix and adds a summary: fewer active messages, a longer system message.
    const compacted = memory.messages.map((message, index) =>
      index < 8 ? withMark(message, "compacted") : message,
    );
    memory.replaceMessages(compacted);
    memory.setSummary({ text: "Earlier: notes were read.", updatedAt: 1, compactions: 1 });
    expect(measured()).toBe(recount(memory));

    // A candidate list measured in between (compaction's what-if) leaves the next measure exact.
    const candidate = memory.activeMessages().slice(2);
    expect(measured(candidate)).toBe(recount(memory, candidate));
    memory.append(user("and now?", clock));
    expect(measured()).toBe(recount(memory));
    expect(measured([])).toBe(recount(memory, []));
    expect(measured()).toBe(recount(memory));
  });

  it("counts a system prompt once for every session that starts with it", () => {
    const base = createTokenCounter();
    const systemCounts: string[] = [];
    const counting: TokenCounter = {
      ...base,
      countMessage(message) {
        if (message.role === "system") systemCounts.push(message.id);
        return base.countMessage(message);
      },
    };
    const longPrompt = `You are Almanac.\n\n${"- a remembered fact about the garden and the budget\n".repeat(200)}`;
    const clock = createTestClock();
    const measures = Array.from({ length: 5 }, () => {
      const memory = new WorkingMemory({ messages: [user("hello", clock)] });
      return createContextMeter(counting).measure(memory, { systemPrompt: longPrompt, tools }).countedTokens;
    });
    expect(new Set(measures).size).toBe(1);
    expect(systemCounts).toHaveLength(1);
    const other = new WorkingMemory({ messages: [user("hello", clock)] });
    const changed = createContextMeter(counting).measure(other, { systemPrompt: `${longPrompt}!`, tools });
    expect(systemCounts).toHaveLength(2);
    expect(changed.countedTokens).toBeGreaterThan(measures[0] as number);
  });

  it("serializes a scope's tool specs once, however many sessions measure them", () => {
    let serialized = 0;
    const parameters = {
      type: "object",
      toJSON() {
        serialized += 1;
        return { type: "object" };
      },
    };
    const specs = [{ name: "read_file", description: "Read a file", parameters }] as unknown as ToolSpec[];
    const ownCounter = createTokenCounter();
    const clock = createTestClock();
    const measure = () =>
      createContextMeter(ownCounter).measure(new WorkingMemory({ messages: [user("hello", clock)] }), {
        systemPrompt,
        tools: specs,
      }).countedTokens;
    const first = measure();
    const afterFirst = serialized;
    expect(afterFirst).toBeGreaterThan(0);
    for (let session = 0; session < 4; session += 1) expect(measure()).toBe(first);
    expect(serialized).toBe(afterFirst);
  });
});
