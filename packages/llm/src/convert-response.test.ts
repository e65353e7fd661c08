import { toolCallsOf } from "@almanac/core";
import { describe, expect, it } from "vitest";
import type { ErrorContext } from "./classify-error.js";
import { parseChatCompletion, toFinishReason, toUsage } from "./convert-response.js";
import { createStreamAssembler } from "./stream-assembler.js";

const context: ErrorContext = {
  operation: "chat",
  model: "configured-model",
  baseURL: "http://127.0.0.1:1/v1",
  apiKey: "sk-convert-secret",
  timeoutMs: 1000,
};

const body = (message: unknown, extra: Record<string, unknown> = {}) => ({
  choices: [{ index: 0, message, finish_reason: "stop" }],
  ...extra,
});

describe("parseChatCompletion", () => {
  it("accepts a body without usage and falls back to the configured model name", () => {
    const response = parseChatCompletion(body({ role: "assistant", content: "hi" }), context, 1);
    expect(response.usage).toBeUndefined();
    expect(response.model).toBe("configured-model");
  });

  it("reads cached prompt tokens and reasoning tokens when the provider reports them", () => {
    const usage = {
      prompt_tokens: 100,
      completion_tokens: 40,
      total_tokens: 140,
      prompt_tokens_details: { cached_tokens: 64 },
      completion_tokens_details: { reasoning_tokens: 30 },
    };
    const response = parseChatCompletion(body({ role: "assistant", content: "x" }, { usage }), context, 1);
    expect(response.usage).toEqual({
      promptTokens: 100,
      completionTokens: 40,
      totalTokens: 140,
      cachedPromptTokens: 64,
      reasoningTokens: 30,
    });
  });

  it("gives tool calls that arrive without an id a generated one", () => {
    const message = {
      role: "assistant",
      content: null,
      tool_calls: [{ type: "function", function: { name: "lookup", arguments: "{}" } }],
    };
    const [call] = toolCallsOf(parseChatCompletion(body(message), context, 1).message);
    expect(call?.id).toMatch(/^call_[0-9a-f]{32}$/);
    expect(call?.name).toBe("lookup");
  });

  it.each([
    ["a string body", "<html>Bad gateway</html>", "not a JSON object"],
    ["no choices", { choices: [] }, "no choices"],
    ["a choice without a message", { choices: [{ finish_reason: "stop" }] }, "choices.0.message"],
    ["a message from another role", body({ role: "user", content: "hi" }), "choices.0.message.role"],
    [
      "a tool call without a name",
      body({ role: "assistant", tool_calls: [{ id: "c", function: {} }] }),
      "name",
    ],
  ])("reports %s as a malformed response", (_label, input, detail) => {
    expect(() => parseChatCompletion(input, context, 1)).toThrow(
      expect.objectContaining({ code: "llm.malformed_response", message: expect.stringContaining(detail) }),
    );
  });
});

describe("toUsage and toFinishReason", () => {
  it("computes a missing total and ignores an unreadable usage object", () => {
    expect(toUsage({ prompt_tokens: 3, completion_tokens: 4 })).toEqual({
      promptTokens: 3,
      completionTokens: 4,
      totalTokens: 7,
    });
    expect(toUsage({ prompt_tokens: "3" })).toBeUndefined();
    expect(toUsage(null)).toBeUndefined();
  });

  it("maps provider finish reasons and sends unknown ones to other", () => {
    expect(toFinishReason("stop")).toBe("stop");
    expect(toFinishReason("function_call")).toBe("tool_calls");
    expect(toFinishReason("length")).toBe("length");
    expect(toFinishReason("eos")).toBe("other");
    expect(toFinishReason(null)).toBe("other");
  });
});

describe("createStreamAssembler", () => {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    choices: [{ index: 0, delta, finish_reason: finish }],
  });

  it("follows tool-call fragments from servers that leave out the index", () => {
    const assembler = createStreamAssembler(context);
    const events = [
      ...assembler.push(chunk({ tool_calls: [{ id: "a", function: { name: "first", arguments: '{"x"' } }] })),
      ...assembler.push(chunk({ tool_calls: [{ function: { arguments: ":1}" } }] })),
      ...assembler.push(chunk({ tool_calls: [{ id: "b", function: { name: "second", arguments: "{}" } }] })),
      ...assembler.push(chunk({}, "tool_calls")),
    ];
    expect(events).toEqual([
      { type: "tool-call-start", id: "a", name: "first" },
      { type: "tool-call-start", id: "b", name: "second" },
    ]);
    expect(toolCallsOf(assembler.finish(1).message).map((call) => [call.id, call.arguments])).toEqual([
      ["a", '{"x":1}'],
      ["b", "{}"],
    ]);
  });

  it("ignores choices other than the first and reads reasoning from either field name", () => {
    const assembler = createStreamAssembler(context);
    const events = [
      ...assembler.push({ choices: [{ index: 1, delta: { content: "other" } }] }),
      ...assembler.push(chunk({ reasoning: "thinking" })),
      ...assembler.push(chunk({ content: "answer" }, "stop")),
    ];
    expect(events).toEqual([
      { type: "reasoning-delta", text: "thinking" },
      { type: "text-delta", text: "answer" },
    ]);
    expect(assembler.finish(1).finishReason).toBe("stop");
  });

  it("rejects a chunk of the wrong shape as a malformed response", () => {
    const assembler = createStreamAssembler(context);
    expect(() => assembler.push({ choices: "nope" })).toThrow(
      expect.objectContaining({ code: "llm.malformed_response" }),
    );
  });
});
