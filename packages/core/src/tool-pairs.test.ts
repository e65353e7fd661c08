import { describe, expect, it } from "vitest";
import { createMessage, type Message, toolResultsOf } from "./message.js";
import { MISSING_TOOL_RESULT_TEXT, pairsIntact, rebuildToolPairs, repairToolPairs } from "./tool-pairs.js";

const user = createMessage({ role: "user", content: "go" });
const call = (ids: string[]): Message =>
  createMessage({
    role: "assistant",
    content: ids.map((id) => ({ type: "tool_call" as const, id, name: "t", arguments: "{}" })),
  });
const result = (id: string): Message =>
  createMessage({ role: "tool", content: [{ type: "tool_result", callId: id, content: "ok" }] });

describe("repairToolPairs", () => {
  it("returns the same array when every call has its result", () => {
    const messages = [user, call(["a", "b"]), result("b"), result("a")];
    expect(repairToolPairs(messages)).toBe(messages);
  });

  it("adds an error result for a call whose result is missing (a turn cut short)", () => {
    const repaired = repairToolPairs([user, call(["a", "b"]), result("a")]);
    expect(repaired).toHaveLength(4);
    const added = toolResultsOf(repaired[3] as Message)[0];
    expect(added).toMatchObject({ callId: "b", isError: true, content: MISSING_TOOL_RESULT_TEXT });
  });

  it("drops tool results that answer no preceding call", () => {
    const repaired = repairToolPairs([
      user,
      result("zzz"),
      createMessage({ role: "assistant", content: "hi" }),
    ]);
    expect(repaired.map((message) => message.role)).toEqual(["user", "assistant"]);
  });

  it("repairs a call at the very end of the conversation", () => {
    const repaired = repairToolPairs([user, call(["x"])]);
    expect(repaired.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
  });
});

describe("repairToolPairs on random conversations", () => {
  it("finds a conversation intact exactly when building the repaired copy changes nothing", () => {
    const ids = ["a", "b", "c"];
    const pick = <T>(items: readonly T[], random: () => number): T =>
      items[Math.floor(random() * items.length)]!;
    let seed = 11;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const multiResult = (callIds: string[]): Message =>
      createMessage({
        role: "tool",
        content: callIds.map((callId) => ({ type: "tool_result" as const, callId, content: "ok" })),
      });
    const emptyTool = createMessage({ role: "tool", content: [{ type: "text", text: "stray" }] });
    for (let round = 0; round < 20_000; round += 1) {
      const length = Math.floor(random() * 7);
      const messages: Message[] = [];
      for (let index = 0; index < length; index += 1) {
        const kind = Math.floor(random() * 6);
        if (kind === 0) messages.push(user);
        else if (kind === 1) messages.push(call([pick(ids, random)]));
        else if (kind === 2) messages.push(call([pick(ids, random), pick(ids, random)]));
        else if (kind === 3) messages.push(result(pick(ids, random)));
        else if (kind === 4) messages.push(multiResult([pick(ids, random), pick(ids, random)]));
        else
          messages.push(random() < 0.5 ? emptyTool : createMessage({ role: "assistant", content: "done" }));
      }
      // The check without a copy agrees with building the copy, both ways.
      expect(pairsIntact(messages), JSON.stringify(messages.map((message) => message.content))).toBe(
        rebuildToolPairs(messages) === messages,
      );
      // After an intact prefix, checking only the rest gives the same answer.
      for (let split = 0; split <= messages.length; split += 1) {
        if (!pairsIntact(messages.slice(0, split))) continue;
        expect(pairsIntact(messages, split), `split at ${split}`).toBe(pairsIntact(messages));
      }
    }
  });
});
