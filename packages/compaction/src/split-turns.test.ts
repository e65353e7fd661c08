import type { Message } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { assistant, createTestClock, toolRound, user } from "../test/transcripts.js";
import { type KeepRecentBudget, splitForCompaction, splitParts } from "./split-turns.js";

const clock = createTestClock();

function turn(request: string, toolRounds: number): Message[] {
  const messages = [user(request, clock)];
  for (let round = 0; round < toolRounds; round += 1) {
    messages.push(
      ...toolRound([{ name: "read_file", arguments: { path: `r${round}.md` }, output: "text" }], clock),
    );
  }
  messages.push(assistant(`answer to ${request}`, clock));
  return messages;
}

/** Every message costs 10 tokens unless overridden. */
function costs(messages: readonly Message[], overrides: Record<number, number> = {}): number[] {
  return messages.map((_, index) => overrides[index] ?? 10);
}

const keep = (budget: number, minMessages = 1, maxTokens = budget): KeepRecentBudget => ({
  budget,
  minMessages,
  maxTokens,
});

describe("splitForCompaction", () => {
  it("cuts only before a user message, keeping as many whole turns as the budget allows", () => {
    const messages = [...turn("a", 1), ...turn("b", 1), ...turn("c", 1)]; // 4 messages per turn
    const split = splitForCompaction(messages, costs(messages), keep(85));
    const parts = splitParts(messages, split);
    expect(parts.kept.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(parts.toSummarize).toHaveLength(4);
    expect(parts.turnPrefix).toHaveLength(0);
  });

  it("always keeps the latest user message, even when it alone is over budget", () => {
    const messages = [...turn("a", 0), user("huge request", clock)];
    const split = splitForCompaction(messages, costs(messages, { 2: 1_000 }), keep(50));
    const parts = splitParts(messages, split);
    expect(parts.kept.at(-1)?.id).toBe(messages.at(-1)?.id);
    expect(parts.toSummarize).toHaveLength(2);
  });

  it("grows the tail to the minimum message count while it stays under the hard limit", () => {
    const messages = [...turn("a", 0), ...turn("b", 0), ...turn("c", 0)];
    expect(
      splitParts(messages, splitForCompaction(messages, costs(messages), keep(15, 4, 40))).kept,
    ).toHaveLength(4);
    expect(
      splitParts(messages, splitForCompaction(messages, costs(messages), keep(15, 4, 30))).kept,
    ).toHaveLength(2);
  });

  it("summarizes the early rounds of a turn that is over budget by itself, keeping the request", () => {
    const messages = [...turn("old", 0), ...turn("big job", 6)];
    const split = splitForCompaction(messages, costs(messages), keep(60));
    const parts = splitParts(messages, split);
    expect(parts.toSummarize.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(parts.kept[0]?.role).toBe("user");
    expect(parts.kept[0]?.id).toBe(messages[2]?.id);
    expect(parts.turnPrefix[0]?.role).toBe("assistant");
    expect(parts.turnPrefix.at(-1)?.role).toBe("tool");
    expect(parts.kept[1]?.role).toBe("assistant");
    expect(parts.kept.length * 10).toBeLessThanOrEqual(60);
  });

  it("keeps the latest round of a turn prefix split even when that round alone is over budget", () => {
    const messages = turn("job", 3);
    messages.pop(); // the turn is still running: it ends with tool results
    const overrides = { [messages.length - 1]: 500 };
    const parts = splitParts(messages, splitForCompaction(messages, costs(messages, overrides), keep(50)));
    expect(parts.kept.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    expect(parts.turnPrefix).toHaveLength(4);
  });

  it("treats a conversation without user messages as one turn split by rounds", () => {
    const messages = [
      ...toolRound([{ name: "x", arguments: {}, output: "o" }], clock),
      assistant("done", clock),
    ];
    const parts = splitParts(messages, splitForCompaction(messages, costs(messages), keep(10)));
    expect(parts.kept.map((message) => message.role)).toEqual(["assistant"]);
    expect(parts.turnPrefix.map((message) => message.role)).toEqual(["assistant", "tool"]);
  });
});
