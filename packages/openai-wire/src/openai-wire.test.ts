import { type ContentBlock, createMessage, type Message, UserError } from "@almanac/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  emptyMessagePlaceholder,
  fromOpenAIMessage,
  toOpenAIMessage,
  toOpenAIMessages,
} from "./openai-wire.js";

function roundTrip(message: Message, includeReasoning = true): Message[] {
  return toOpenAIMessage(message, { includeReasoning }).map((wire) =>
    fromOpenAIMessage(JSON.parse(JSON.stringify(wire)), {
      id: message.id,
      timestamp: message.timestamp,
      marks: message.marks,
    }),
  );
}

describe("OpenAI wire conversion", () => {
  it("sends a single text block as a plain string", () => {
    const [wire] = toOpenAIMessages([createMessage({ role: "user", content: "hi", name: "ann" })]);
    expect(wire).toEqual({ role: "user", content: "hi", name: "ann" });
  });

  it("keeps text and image parts of a user message in order", () => {
    const message = createMessage({
      role: "user",
      content: [
        { type: "text", text: "look" },
        { type: "image", url: "https://example.com/a.png", detail: "high" },
        { type: "text", text: "and this" },
      ],
    });
    expect(roundTrip(message)).toEqual([message]);
  });

  it("carries assistant text, tool calls and reasoning, and omits reasoning unless asked", () => {
    const message = createMessage({
      role: "assistant",
      content: [
        { type: "reasoning", text: "let me check" },
        { type: "text", text: "checking" },
        { type: "tool_call", id: "call_1", name: "read_file", arguments: '{"path":"a"}' },
        { type: "tool_call", id: "call_2", name: "list_files", arguments: "{}" },
      ],
    });
    expect(roundTrip(message)).toEqual([message]);
    const [wire] = toOpenAIMessage(message);
    expect(wire).not.toHaveProperty("reasoning_content");
    expect(wire).toMatchObject({ role: "assistant", content: "checking" });
  });

  it("sends an assistant message with only tool calls with null content", () => {
    const message = createMessage({
      role: "assistant",
      content: [{ type: "tool_call", id: "c", name: "t", arguments: "{}" }],
    });
    expect(toOpenAIMessage(message)[0]).toMatchObject({ content: null });
  });

  it("turns a tool message with two results into two wire messages", () => {
    const message = createMessage({
      role: "tool",
      content: [
        { type: "tool_result", callId: "a", content: "1" },
        { type: "tool_result", callId: "b", content: "2" },
      ],
    });
    expect(toOpenAIMessage(message)).toEqual([
      { role: "tool", content: "1", tool_call_id: "a" },
      { role: "tool", content: "2", tool_call_id: "b" },
    ]);
  });

  it("maps the developer role to system and reads `reasoning` as reasoning", () => {
    expect(fromOpenAIMessage({ role: "developer", content: "rules" }).role).toBe("system");
    const message = fromOpenAIMessage({ role: "assistant", content: "x", reasoning: "why" });
    expect(message.content[0]).toEqual({ type: "reasoning", text: "why" });
  });

  it("rejects malformed wire messages with a user error naming the problem", () => {
    expect(() => fromOpenAIMessage({ role: "tool", content: "x" })).toThrow(UserError);
    expect(() => fromOpenAIMessage({ role: "wizard", content: "x" })).toThrow(/Not a valid chat message/);
    expect(() => fromOpenAIMessage("nope")).toThrow(UserError);
  });

  it("round-trips every message the wire format can carry (property)", () => {
    // Text that says something: a message of only whitespace is sent as the placeholder (tested below), by design.
    const text = fc.string({ minLength: 1 }).filter((value) => value.trim() !== "");
    const textBlock = text.map((value): ContentBlock => ({ type: "text", text: value }));
    const imageBlock = fc
      .record({
        url: fc.webUrl(),
        detail: fc.constantFrom("auto", "low", "high") as fc.Arbitrary<"auto" | "low" | "high">,
      })
      .map((value): ContentBlock => ({ type: "image", ...value }));
    const toolCall = fc
      .record({ id: fc.uuid(), name: fc.stringMatching(/^[a-z_]{1,20}$/), arguments: fc.json() })
      .map((value): ContentBlock => ({ type: "tool_call", ...value }));
    const messageArbitrary = fc.oneof(
      fc
        .array(textBlock, { minLength: 1, maxLength: 3 })
        .map((content) => createMessage({ role: "system", content })),
      fc
        .array(fc.oneof(textBlock, imageBlock), { minLength: 1, maxLength: 4 })
        .map((content) => createMessage({ role: "user", content })),
      fc
        .tuple(
          fc.option(text, { nil: undefined }),
          fc.array(textBlock, { maxLength: 2 }),
          fc.array(toolCall, { maxLength: 3 }),
        )
        .filter(([, texts, calls]) => texts.length + calls.length > 0)
        .map(([reasoning, texts, calls]) =>
          createMessage({
            role: "assistant",
            content: [
              ...(reasoning === undefined ? [] : [{ type: "reasoning" as const, text: reasoning }]),
              ...texts,
              ...calls,
            ],
          }),
        ),
      fc
        .record({ callId: fc.uuid(), content: fc.string() })
        .map((result) => createMessage({ role: "tool", content: [{ type: "tool_result", ...result }] })),
    );
    fc.assert(
      fc.property(messageArbitrary, (message) => {
        expect(roundTrip(message)).toEqual([message]);
      }),
    );
  });
});

describe("messages a strict server would refuse as empty", () => {
  it("go out with a placeholder, so a stored empty message cannot fail every later request", () => {
    const wire = toOpenAIMessages([
      createMessage({ role: "user", content: [] }),
      createMessage({ role: "user", content: "  " }),
      createMessage({ role: "assistant", content: [] }),
      createMessage({ role: "system", content: [] }),
    ]);
    expect(wire.map((message) => message.content)).toEqual([
      emptyMessagePlaceholder.user,
      emptyMessagePlaceholder.user,
      emptyMessagePlaceholder.assistant,
      emptyMessagePlaceholder.system,
    ]);
  });

  it("leave an assistant message with tool calls and no text at content null", () => {
    const [wire] = toOpenAIMessages([
      createMessage({
        role: "assistant",
        content: [{ type: "tool_call", id: "c1", name: "read_file", arguments: "{}" }],
      }),
    ]);
    expect(wire).toMatchObject({ role: "assistant", content: null });
  });
});
