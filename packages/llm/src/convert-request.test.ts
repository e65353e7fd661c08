import { createMessage } from "@almanac/core";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { toChatCompletionBody } from "./convert-request.js";
import { createOpenAIChatModel } from "./openai-chat-model.js";

const messages = [createMessage({ role: "user", content: "hi" })];

describe("toChatCompletionBody's output cap", () => {
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
