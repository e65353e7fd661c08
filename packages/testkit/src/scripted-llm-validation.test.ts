import { createMessage, type Message } from "@almanac/core";
import { toOpenAIMessages } from "@almanac/openai-wire";
import { countToolTokens, createTokenCounter } from "@almanac/tokenizer";
import fc from "fast-check";
import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { afterEach, describe, expect, it } from "vitest";
import { script } from "./script.js";
import {
  DEFAULT_CONTEXT_WINDOW,
  type ScriptedLlm,
  type ScriptedLlmOptions,
  startScriptedLlm,
} from "./scripted-llm.js";
import { findEmptyContentError, findToolPairingError } from "./scripted-llm-validation.js";

const servers: ScriptedLlm[] = [];
async function start(options: ScriptedLlmOptions = {}): Promise<{ llm: ScriptedLlm; client: OpenAI }> {
  const llm = await startScriptedLlm(options);
  servers.push(llm);
  return { llm, client: new OpenAI({ baseURL: llm.baseURL, apiKey: "k", maxRetries: 0 }) };
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const conversation: Message[] = [
  createMessage({ role: "system", content: "You are Almanac, a helpful assistant." }),
  createMessage({ role: "user", content: "What did we decide about the release on Friday?" }),
  createMessage({
    role: "assistant",
    content: [{ type: "tool_call", id: "call_1", name: "memory_search", arguments: '{"q":"release"}' }],
  }),
  createMessage({
    role: "tool",
    content: [{ type: "tool_result", callId: "call_1", content: "Release moved to Monday." }],
  }),
];
const wire: ChatCompletionMessageParam[] = toOpenAIMessages(conversation);
const promptTokens = createTokenCounter().countMessages(conversation);

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => "accepted",
    (caught: unknown) => caught,
  );
}

describe("context window", () => {
  it("accepts a prompt of exactly the window, counted like the tokenizer's counter counts", async () => {
    const { llm, client } = await start({ contextWindow: promptTokens });
    llm.enqueue(script.text("ok"));
    const completion = await client.chat.completions.create({ model: "m", messages: wire });
    expect(completion.usage?.prompt_tokens).toBe(promptTokens);
  });

  it("rejects a prompt one token over the window with context_length_exceeded, keeping the step", async () => {
    const { llm, client } = await start({ contextWindow: promptTokens - 1 });
    llm.enqueue(script.text("ok"));
    const error = await rejection(client.chat.completions.create({ model: "m", messages: wire }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({
      status: 400,
      code: "context_length_exceeded",
      type: "invalid_request_error",
      message: expect.stringContaining(
        `This model's maximum context length is ${promptTokens - 1} tokens. However, your messages resulted in ${promptTokens} tokens. Please reduce the length of the messages.`,
      ),
    });
    expect(llm.pending()).toBe(1);
    expect(llm.rejections()).toHaveLength(1);
    expect(llm.rejections()[0]?.rejected?.code).toBe("context_length_exceeded");
    expect(llm.chatRequests()).toHaveLength(1);
  });

  it("counts the requested completion tokens against the window", async () => {
    const { llm, client } = await start({ contextWindow: promptTokens + 10 });
    llm.enqueue(script.text("ok"));
    await expect(
      client.chat.completions.create({ model: "m", messages: wire, max_tokens: 10 }),
    ).resolves.toBeDefined();
    const error = await rejection(
      client.chat.completions.create({ model: "m", messages: wire, max_completion_tokens: 11 }),
    );
    expect(error).toMatchObject({
      code: "context_length_exceeded",
      message: expect.stringContaining(
        `you requested ${promptTokens + 11} tokens (${promptTokens} in the messages, 11 in the completion)`,
      ),
    });
  });

  it("counts the tools JSON as part of the prompt", async () => {
    const { llm, client } = await start({ contextWindow: promptTokens });
    llm.enqueue(script.text("ok"));
    const tools = [
      {
        type: "function" as const,
        function: { name: "memory_search", description: "Search notes", parameters: { type: "object" } },
      },
    ];
    const error = await rejection(client.chat.completions.create({ model: "m", messages: wire, tools }));
    expect(error).toMatchObject({ code: "context_length_exceeded" });
    expect(llm.pending()).toBe(1);
  });

  it("counts tool specs exactly as the tokenizer's countToolTokens does, so a request sized by our meter is never refused", async () => {
    const specs = [
      { name: "memory_search", description: "Search notes", parameters: { type: "object" } },
      { name: "read_day_log", description: "Read the log", parameters: { type: "object", properties: {} } },
    ];
    const tools = specs.map((spec) => ({ type: "function" as const, function: spec }));
    const window = promptTokens + countToolTokens(createTokenCounter(), specs);
    const { llm, client } = await start({ contextWindow: window });
    llm.enqueue(script.text("ok"), script.text("ok"));
    const completion = await client.chat.completions.create({ model: "m", messages: wire, tools });
    expect(completion.usage?.prompt_tokens).toBe(window);
    const error = await rejection(
      client.chat.completions.create({ model: "m", messages: wire, tools, max_tokens: 1 }),
    );
    expect(error).toMatchObject({ code: "context_length_exceeded" });
  });
});

describe("strict by default", () => {
  const huge = [{ role: "user" as const, content: "word ".repeat(DEFAULT_CONTEXT_WINDOW) }];

  it("checks a default window when the test names none", async () => {
    const { llm, client } = await start();
    llm.enqueue(script.text("ok"));
    const error = await rejection(client.chat.completions.create({ model: "m", messages: huge }));
    expect(error).toMatchObject({ status: 400, code: "context_length_exceeded" });
    const fits = await client.chat.completions.create({ model: "m", messages: wire, max_tokens: 4096 });
    expect(fits.choices[0]?.message.content).toBe("ok");
  });

  it("lets a test that means to send oversized requests turn the window check off", async () => {
    const { llm, client } = await start({ contextWindow: false });
    llm.enqueue(script.text("ok"));
    const completion = await client.chat.completions.create({ model: "m", messages: huge });
    expect(completion.choices[0]?.message.content).toBe("ok");
  });

  it("checks tool pairing unless a test opts out", async () => {
    const unanswered = toOpenAIMessages(conversation.slice(0, 3));
    const strict = await start();
    strict.llm.enqueue(script.text("ok"));
    const error = await rejection(
      strict.client.chat.completions.create({ model: "m", messages: unanswered }),
    );
    expect(error).toMatchObject({ status: 400, code: "invalid_tool_pairing" });
    const lax = await start({ checkToolPairing: false });
    lax.llm.enqueue(script.text("ok"));
    const completion = await lax.client.chat.completions.create({ model: "m", messages: unanswered });
    expect(completion.choices[0]?.message.content).toBe("ok");
  });
});

describe("tool pairing", () => {
  const call = (ids: string[]): ChatCompletionMessageParam => ({
    role: "assistant",
    content: null,
    tool_calls: ids.map((id) => ({ id, type: "function", function: { name: "f", arguments: "{}" } })),
  });
  const result = (id: string): ChatCompletionMessageParam => ({
    role: "tool",
    tool_call_id: id,
    content: "done",
  });
  const user: ChatCompletionMessageParam = { role: "user", content: "hi" };

  it("accepts tool calls answered right after, in any order", async () => {
    const { llm, client } = await start();
    llm.enqueue(script.text("ok"));
    const messages = [user, call(["call_a", "call_b"]), result("call_b"), result("call_a")];
    await expect(client.chat.completions.create({ model: "m", messages })).resolves.toBeDefined();
  });

  it("rejects an assistant tool call without a result, naming the id and keeping the step", async () => {
    const { llm, client } = await start();
    llm.enqueue(script.text("ok"));
    const messages = [user, call(["call_a", "call_b"]), result("call_a"), user];
    const error = await rejection(client.chat.completions.create({ model: "m", messages }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: "invalid_tool_pairing", message: expect.stringContaining("call_b") });
    expect(llm.pending()).toBe(1);
  });

  it("rejects a tool call left unanswered at the end of the conversation", async () => {
    const { client } = await start();
    const error = await rejection(
      client.chat.completions.create({ model: "m", messages: [user, call(["call_z"])] }),
    );
    expect(error).toMatchObject({ code: "invalid_tool_pairing", message: expect.stringContaining("call_z") });
  });

  it("rejects an orphan tool result, naming its id", async () => {
    const { llm, client } = await start();
    const error = await rejection(
      client.chat.completions.create({ model: "m", messages: [user, result("call_ghost")] }),
    );
    expect(error).toMatchObject({
      code: "invalid_tool_pairing",
      message: expect.stringContaining("call_ghost"),
    });
    expect(llm.rejections()[0]?.rejected).toMatchObject({ status: 400, code: "invalid_tool_pairing" });
  });

  it("rejects a tool result separated from its call by another message", async () => {
    const { client } = await start();
    const messages = [user, call(["call_a"]), user, result("call_a")];
    const error = await rejection(client.chat.completions.create({ model: "m", messages }));
    expect(error).toMatchObject({ code: "invalid_tool_pairing" });
  });

  it("finds no error in any correctly paired conversation and names a dropped result's id", () => {
    const turn = fc.record({
      calls: fc.uniqueArray(fc.stringMatching(/^[a-z0-9]{1,6}$/), { maxLength: 3 }),
      reply: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(turn, { minLength: 1, maxLength: 6 }), fc.nat(), (turns, pick) => {
        const messages: Message[] = [];
        const allIds: string[] = [];
        for (const [index, { calls, reply }] of turns.entries()) {
          const ids = calls.map((id) => `call_${index}_${id}`);
          allIds.push(...ids);
          messages.push(createMessage({ role: "user", content: "go" }));
          messages.push(
            createMessage({
              role: "assistant",
              content: ids.map((id) => ({ type: "tool_call" as const, id, name: "f", arguments: "{}" })),
            }),
          );
          for (const id of [...ids].reverse()) {
            messages.push(
              createMessage({ role: "tool", content: [{ type: "tool_result", callId: id, content: "x" }] }),
            );
          }
          if (reply) messages.push(createMessage({ role: "assistant", content: "done" }));
        }
        expect(findToolPairingError(messages)).toBeUndefined();
        if (allIds.length === 0) return;
        const dropped = allIds[pick % allIds.length]!;
        const broken = messages.filter(
          (message) =>
            !(
              message.role === "tool" &&
              message.content.some((block) => block.type === "tool_result" && block.callId === dropped)
            ),
        );
        expect(findToolPairingError(broken)).toContain(dropped);
      }),
    );
  });
});

describe("malformed bodies", () => {
  async function post(llm: ScriptedLlm, body: string): Promise<{ status: number; json: unknown }> {
    const response = await fetch(`${llm.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    return { status: response.status, json: await response.json() };
  }

  it.each([
    ["a body without model", JSON.stringify({ messages: [{ role: "user", content: "hi" }] })],
    ["an empty messages array", JSON.stringify({ model: "m", messages: [] })],
    ["messages that are not an array", JSON.stringify({ model: "m", messages: "hi" })],
    [
      "a message with an unknown role",
      JSON.stringify({ model: "m", messages: [{ role: "robot", content: "hi" }] }),
    ],
    ["a body that is not JSON", "{not json"],
    [
      "a user message with content []",
      JSON.stringify({ model: "m", messages: [{ role: "user", content: [] }] }),
    ],
    [
      "an empty user message after a good one",
      JSON.stringify({
        model: "m",
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: "hello" },
          { role: "user", content: "" },
        ],
      }),
    ],
    [
      "an assistant message with neither content nor tool calls",
      JSON.stringify({
        model: "m",
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: null },
          { role: "user", content: "again" },
        ],
      }),
    ],
  ])("rejects %s with 400 invalid_request_body, keeping the step", async (_name, body) => {
    const { llm } = await start();
    llm.enqueue(script.text("ok"));
    const { status, json } = await post(llm, body);
    expect(status).toBe(400);
    expect(json).toMatchObject({
      error: { type: "invalid_request_error", code: "invalid_request_body", param: null },
    });
    expect(llm.pending()).toBe(1);
    expect(llm.rejections()).toHaveLength(1);
    expect(llm.requests).toHaveLength(1);
  });
});

describe("empty content", () => {
  it("names the message the way OpenAI does, and accepts tool calls without content and empty tool results", () => {
    expect(findEmptyContentError({ role: "user", content: [] }, 3)).toBe(
      "Invalid 'messages[3].content': empty array. Expected an array with minimum length 1, but got an empty array instead.",
    );
    expect(findEmptyContentError({ role: "user", content: "hi" }, 0)).toBeUndefined();
    expect(
      findEmptyContentError(
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }],
        },
        1,
      ),
    ).toBeUndefined();
    expect(findEmptyContentError({ role: "tool", content: "", tool_call_id: "c" }, 2)).toBeUndefined();
  });
});
