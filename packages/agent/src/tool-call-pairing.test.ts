import { createMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { answerOpenToolCalls, openToolCalls } from "./tool-call-pairing.js";
import { WorkingMemory } from "./working-memory.js";

const asksForTwo = createMessage({
  role: "assistant",
  content: [
    { type: "tool_call", id: "call_1", name: "read_file", arguments: "{}" },
    { type: "tool_call", id: "call_2", name: "list_files", arguments: "{}" },
  ],
});
const answersFirst = createMessage({
  role: "tool",
  content: [{ type: "tool_result", callId: "call_1", content: "ok" }],
});

describe("openToolCalls", () => {
  it("finds the calls of the last assistant message that have no result yet", () => {
    expect(openToolCalls([asksForTwo, answersFirst]).map((call) => call.id)).toEqual(["call_2"]);
  });

  it("finds nothing once a later assistant message has answered in text", () => {
    const reply = createMessage({ role: "assistant", content: "done" });
    expect(openToolCalls([asksForTwo, answersFirst, reply])).toEqual([]);
  });
});

describe("answerOpenToolCalls", () => {
  it("appends one error result per open call and leaves answered ones alone", () => {
    const memory = new WorkingMemory({ messages: [asksForTwo, answersFirst] });
    answerOpenToolCalls(memory, "not run", 42);
    expect(memory.messages).toHaveLength(3);
    expect(memory.messages[2]).toMatchObject({
      role: "tool",
      timestamp: 42,
      content: [{ type: "tool_result", callId: "call_2", content: "not run", isError: true }],
    });
    answerOpenToolCalls(memory, "not run", 43);
    expect(memory.messages).toHaveLength(3);
  });
});
