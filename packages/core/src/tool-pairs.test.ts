import { describe, expect, it } from "vitest";
import { createMessage, type Message, toolResultsOf } from "./message.js";
import { MISSING_TOOL_RESULT_TEXT, repairToolPairs } from "./tool-pairs.js";

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
