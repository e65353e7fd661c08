import { createMessage, type Logger, messageText, toolCallsOf } from "@almanac/core";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createOpenAIChatModel, type OpenAIChatModelConfig, type UsageReport } from "./openai-chat-model.js";

const apiKey = "sk-test-chat-secret-7f3a9c";
let llm: ScriptedLlm;

beforeEach(async () => {
  llm = await startScriptedLlm({ apiKey });
});
afterEach(async () => {
  await llm.close();
});

function chatModel(overrides: Partial<OpenAIChatModelConfig> = {}) {
  return createOpenAIChatModel({
    baseURL: llm.baseURL,
    apiKey,
    model: "scripted-model",
    sleep: async () => {},
    ...overrides,
  });
}

const user = (text: string) => createMessage({ role: "user", content: text });

describe("createOpenAIChatModel — complete", () => {
  it("answers a text completion with the assistant message, finish reason and usage", async () => {
    llm.enqueue(script.text("Hello there", { usage: { prompt_tokens: 12, completion_tokens: 3 } }));
    const response = await chatModel().complete({ messages: [user("hi")] });

    expect(response.message.role).toBe("assistant");
    expect(messageText(response.message)).toBe("Hello there");
    expect(response.finishReason).toBe("stop");
    expect(response.usage).toEqual({ promptTokens: 12, completionTokens: 3, totalTokens: 15 });
    expect(response.model).toBe("scripted-model");
    expect(response.attempts).toBe(1);

    const [sent] = llm.chatRequests();
    expect(sent?.model).toBe("scripted-model");
    expect(sent?.stream).toBe(false);
    expect(sent?.messages).toEqual([{ role: "user", content: "hi" }]);
    expect(llm.requests[0]?.headers.authorization).toBe(`Bearer ${apiKey}`);
  });

  it("returns the provider's reasoning_content as a reasoning block before the text", async () => {
    llm.enqueue(script.text("42", { reasoning: "six times seven" }));
    const response = await chatModel().complete({ messages: [user("answer?")] });
    expect(response.message.content).toEqual([
      { type: "reasoning", text: "six times seven" },
      { type: "text", text: "42" },
    ]);
  });

  it("sends tools, tool choice, temperature and max_tokens in OpenAI's wire shape", async () => {
    llm.enqueue(script.text("ok"));
    const parameters = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    await chatModel().complete({
      messages: [user("weather?")],
      tools: [{ name: "get_weather", description: "Weather for a city", parameters }],
      toolChoice: { name: "get_weather" },
      temperature: 0.2,
      maxOutputTokens: 100,
    });
    const [sent] = llm.chatRequests();
    expect(sent?.tools).toEqual([
      { type: "function", function: { name: "get_weather", description: "Weather for a city", parameters } },
    ]);
    expect(sent?.tool_choice).toEqual({ type: "function", function: { name: "get_weather" } });
    expect(sent?.temperature).toBe(0.2);
    expect(sent?.max_tokens).toBe(100);
  });

  it("leaves out optional fields the request did not set", async () => {
    llm.enqueue(script.text("ok"));
    await chatModel().complete({ messages: [user("hi")], toolChoice: "required" });
    const [sent] = llm.chatRequests();
    expect(sent).not.toHaveProperty("tools");
    expect(sent).not.toHaveProperty("tool_choice");
    expect(sent).not.toHaveProperty("temperature");
    expect(sent).not.toHaveProperty("max_tokens");
  });

  it("returns the tool calls the model asks for with their raw JSON arguments", async () => {
    llm.enqueue(
      script.toolCalls([
        { id: "call_1", name: "get_weather", arguments: { city: "Paris" } },
        { id: "call_2", name: "get_time", arguments: "{}" },
      ]),
    );
    const response = await chatModel().complete({ messages: [user("weather and time?")] });
    expect(response.finishReason).toBe("tool_calls");
    expect(toolCallsOf(response.message)).toEqual([
      { type: "tool_call", id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "tool_call", id: "call_2", name: "get_time", arguments: "{}" },
    ]);
  });

  it("sends a tool-call round trip in a form the strict server accepts", async () => {
    llm.enqueue(script.text("It is sunny in Paris."));
    const response = await chatModel().complete({
      messages: [
        createMessage({ role: "system", content: "Be brief." }),
        user("weather in Paris?"),
        createMessage({
          role: "assistant",
          content: [{ type: "tool_call", id: "call_9", name: "get_weather", arguments: '{"city":"Paris"}' }],
        }),
        createMessage({
          role: "tool",
          content: [{ type: "tool_result", callId: "call_9", content: "sunny" }],
        }),
      ],
    });
    expect(messageText(response.message)).toBe("It is sunny in Paris.");
    expect(llm.rejections()).toEqual([]);
    expect(llm.chatRequests()[0]?.messages.map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
    ]);
  });

  it("sends the configured extra headers with every request", async () => {
    llm.enqueue(script.text("ok"));
    await chatModel({ headers: { "x-title": "Almanac" } }).complete({ messages: [user("hi")] });
    expect(llm.requests[0]?.headers["x-title"]).toBe("Almanac");
  });

  it("adds usage up across calls and reports each successful call to onUsage", async () => {
    llm.enqueue(
      script.text("one", { usage: { prompt_tokens: 10, completion_tokens: 2 } }),
      script.error(500),
      script.text("two", { usage: { prompt_tokens: 20, completion_tokens: 5 } }),
    );
    const reports: UsageReport[] = [];
    let clock = 1000;
    const model = chatModel({
      onUsage: (report) => reports.push(report),
      now: () => {
        clock += 50;
        return clock;
      },
    });
    await model.complete({ messages: [user("first")] });
    await model.complete({ messages: [user("second")] });

    expect(model.usageTotals()).toEqual({
      calls: 2,
      promptTokens: 30,
      completionTokens: 7,
      totalTokens: 37,
      retries: 1,
      failures: 0,
    });
    expect(reports.map((report) => [report.usage.totalTokens, report.attempts])).toEqual([
      [12, 1],
      [25, 2],
    ]);
    expect(reports[0]?.model).toBe("scripted-model");
    expect(reports.every((report) => report.latencyMs > 0)).toBe(true);
  });

  it("keeps answering when the onUsage callback throws", async () => {
    llm.enqueue(script.text("fine"));
    const warnings: string[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (_fields, message) => warnings.push(message ?? ""),
      error: () => {},
      child: () => logger,
    };
    const model = chatModel({
      logger,
      onUsage: () => {
        throw new Error("metrics down");
      },
    });
    const response = await model.complete({ messages: [user("hi")] });
    expect(messageText(response.message)).toBe("fine");
    expect(warnings).toEqual(["onUsage callback threw; ignored"]);
  });

  it("exposes its model name and configured context window", () => {
    const model = chatModel({ contextWindow: 128_000 });
    expect(model.modelName).toBe("scripted-model");
    expect(model.contextWindow).toBe(128_000);
    expect(chatModel().contextWindow).toBeUndefined();
  });

  it("rejects an invalid setting with llm.config_invalid naming the key", () => {
    expect(() => chatModel({ timeoutMs: 0 })).toThrow(
      expect.objectContaining({
        code: "llm.config_invalid",
        message: expect.stringContaining('"timeoutMs"'),
      }),
    );
    expect(() => chatModel({ baseURL: "not a url" })).toThrow(/"baseURL"/);
    expect(() => chatModel({ model: " " })).toThrow(/"model"/);
  });
});
