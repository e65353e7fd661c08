import { createMessage } from "@almanac/core";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type ConvertRequestOptions, toChatCompletionJson } from "./convert-request.js";
import { createOpenAIChatModel } from "./openai-chat-model.js";

const messages = [createMessage({ role: "user", content: "hi" })];

/** The body as the server receives it. */
const toChatCompletionBody = (
  request: Parameters<typeof toChatCompletionJson>[0],
  options: ConvertRequestOptions,
): Record<string, unknown> => JSON.parse(toChatCompletionJson(request, options)) as Record<string, unknown>;

describe("the request body's output cap", () => {
  it("sends the request's cap as max_tokens by default", () => {
    const body = toChatCompletionBody({ messages, maxOutputTokens: 300 }, { model: "m" });
    expect(body.max_tokens).toBe(300);
    expect(body).not.toHaveProperty("max_completion_tokens");
  });

  it("sends it as max_completion_tokens when configured so (OpenAI's newer models refuse max_tokens)", () => {
    const body = toChatCompletionBody(
      { messages, maxOutputTokens: 300 },
      { model: "m", outputCapParameter: "max_completion_tokens" },
    );
    expect(body.max_completion_tokens).toBe(300);
    expect(body).not.toHaveProperty("max_tokens");
  });

  it("sends no cap at all when configured off", () => {
    const body = toChatCompletionBody(
      { messages, maxOutputTokens: 300 },
      { model: "m", outputCapParameter: "off", defaultMaxOutputTokens: 900 },
    );
    expect(body).not.toHaveProperty("max_tokens");
    expect(body).not.toHaveProperty("max_completion_tokens");
  });

  it("falls back to the model's default cap when the request sets none, and prefers the request's own", () => {
    expect(toChatCompletionBody({ messages }, { model: "m", defaultMaxOutputTokens: 900 }).max_tokens).toBe(
      900,
    );
    expect(
      toChatCompletionBody({ messages, maxOutputTokens: 50 }, { model: "m", defaultMaxOutputTokens: 900 })
        .max_tokens,
    ).toBe(50);
  });
});

describe("toChatCompletionJson", () => {
  const tool = Object.freeze({
    name: "memory_search",
    description: "Search memory",
    parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  });
  const history = [
    createMessage({ role: "system", content: "You are Almanac." }),
    createMessage({ role: "user", content: [{ type: "text", text: 'a \u2028 "quoted" 你好' }] }),
    createMessage({
      role: "assistant",
      content: [
        { type: "reasoning", text: "think" },
        { type: "text", text: "looking" },
        { type: "tool_call", id: "c1", name: "memory_search", arguments: '{"query":"x"}' },
      ],
    }),
    createMessage({ role: "tool", content: [{ type: "tool_result", callId: "c1", content: "found" }] }),
  ];

  it("carries the history, tools, tool choice, temperature, cap and extra fields, the same when cached", () => {
    const request = {
      messages: history,
      tools: [tool],
      toolChoice: { name: "memory_search" },
      temperature: 0.2,
      maxOutputTokens: 77,
    };
    const assistant = {
      role: "assistant",
      content: "looking",
      tool_calls: [
        { id: "c1", type: "function", function: { name: "memory_search", arguments: '{"query":"x"}' } },
      ],
    };
    for (const includeReasoning of [false, true]) {
      const expected = {
        model: "m",
        messages: [
          { role: "system", content: "You are Almanac." },
          { role: "user", content: 'a \u2028 "quoted" 你好' },
          includeReasoning ? { ...assistant, reasoning_content: "think" } : assistant,
          { role: "tool", content: "found", tool_call_id: "c1" },
        ],
        tools: [
          {
            type: "function",
            function: { name: tool.name, description: tool.description, parameters: tool.parameters },
          },
        ],
        tool_choice: { type: "function", function: { name: "memory_search" } },
        temperature: 0.2,
        max_tokens: 77,
        stream: true,
      };
      // Twice: the second call reads the cached pieces.
      for (let round = 0; round < 2; round += 1)
        expect(
          JSON.parse(toChatCompletionJson(request, { model: "m", includeReasoning }, { stream: true })),
        ).toEqual(expected);
    }
    expect(JSON.parse(toChatCompletionJson({ messages: [] }, { model: "m" }))).toEqual({
      model: "m",
      messages: [],
    });
  });

  it("encodes a message that is not frozen anew each time", () => {
    const open = { ...createMessage({ role: "user", content: "before" }) };
    expect(Object.isFrozen(open)).toBe(false);
    toChatCompletionJson({ messages: [open] }, { model: "m" });
    (open as { content: unknown }).content = [{ type: "text", text: "after" }];
    expect(JSON.parse(toChatCompletionJson({ messages: [open] }, { model: "m" })).messages).toEqual([
      { role: "user", content: "after" },
    ]);
  });
});

describe("the chat model's output cap on the wire", () => {
  let llm: ScriptedLlm | undefined;
  afterEach(async () => {
    await llm?.close();
  });

  it("puts the configured cap on every request, streamed or not, under the configured name", async () => {
    llm = await startScriptedLlm({ contextWindow: 1_000 });
    const model = createOpenAIChatModel({
      baseURL: llm.baseURL,
      apiKey: "k",
      model: "scripted-model",
      maxOutputTokens: 400,
      outputCapParameter: "max_completion_tokens",
      maxRetries: 0,
    });
    llm.enqueue(script.text("one"), script.text("two"));
    await model.complete({ messages });
    for await (const _event of model.stream({ messages })) {
      // drain
    }
    expect(llm.chatRequests().map((request) => request.max_completion_tokens)).toEqual([400, 400]);
    // The strict server counts the cap against the window: prompt + cap must fit.
    llm.enqueue(script.text("three"));
    const tooBig = createOpenAIChatModel({
      baseURL: llm.baseURL,
      apiKey: "k",
      model: "scripted-model",
      maxOutputTokens: 1_000,
      maxRetries: 0,
    });
    await expect(tooBig.complete({ messages })).rejects.toMatchObject({ code: "llm.context_length" });
  });
});
