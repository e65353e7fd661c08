import { createServer } from "node:http";
import { type ChatStreamEvent, createMessage, messageText, toolCallsOf } from "@almanac/core";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError } from "./model-error.js";
import { createOpenAIChatModel, type OpenAIChatModelConfig } from "./openai-chat-model.js";

const apiKey = "sk-test-stream-secret-91b0";
let llm: ScriptedLlm;
let sleeps: number[];

beforeEach(async () => {
  llm = await startScriptedLlm({ apiKey });
  sleeps = [];
});
afterEach(async () => {
  await llm.close();
});

function chatModel(overrides: Partial<OpenAIChatModelConfig> = {}) {
  return createOpenAIChatModel({
    baseURL: llm.baseURL,
    apiKey,
    model: "scripted-model",
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...overrides,
  });
}

const ask = { messages: [createMessage({ role: "user", content: "hi" })] };

async function collect(events: AsyncIterable<ChatStreamEvent>): Promise<ChatStreamEvent[]> {
  const collected: ChatStreamEvent[] = [];
  for await (const event of events) collected.push(event);
  return collected;
}

function finishOf(events: readonly ChatStreamEvent[]) {
  const last = events.at(-1);
  if (last?.type !== "finish") throw new Error(`stream did not end with finish: ${JSON.stringify(last)}`);
  return last.response;
}

describe("createOpenAIChatModel — stream", () => {
  it("yields text deltas and finishes with the assembled message and usage", async () => {
    llm.enqueue(script.text("Hello streaming world", { usage: { prompt_tokens: 9, completion_tokens: 3 } }));
    const events = await collect(chatModel().stream(ask));

    const deltas = events.filter((event) => event.type === "text-delta").map((event) => event.text);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe("Hello streaming world");
    const response = finishOf(events);
    expect(messageText(response.message)).toBe("Hello streaming world");
    expect(response.finishReason).toBe("stop");
    expect(response.usage).toEqual({ promptTokens: 9, completionTokens: 3, totalTokens: 12 });
    expect(response.attempts).toBe(1);
    const [sent] = llm.chatRequests();
    expect(sent?.stream).toBe(true);
    expect(sent?.stream_options).toEqual({ include_usage: true });
  });

  it("yields reasoning deltas before the text and keeps them as a reasoning block", async () => {
    llm.enqueue(script.text("Paris.", { reasoning: "France's capital is Paris" }));
    const events = await collect(chatModel().stream(ask));
    const kinds = events.map((event) => event.type);
    expect(kinds.indexOf("reasoning-delta")).toBeLessThan(kinds.indexOf("text-delta"));
    const reasoning = events.flatMap((event) => (event.type === "reasoning-delta" ? [event.text] : []));
    expect(reasoning.join("")).toBe("France's capital is Paris");
    expect(finishOf(events).message.content[0]).toEqual({
      type: "reasoning",
      text: "France's capital is Paris",
    });
  });

  it("announces streamed tool calls and joins their argument fragments by index", async () => {
    const longArguments = { city: "Paris", units: "metric", days: 5, note: "a longer argument string" };
    llm.enqueue(
      script.toolCalls([
        { id: "call_a", name: "get_weather", arguments: longArguments },
        { id: "call_b", name: "get_time", arguments: { zone: "Europe/Paris" } },
      ]),
    );
    const events = await collect(chatModel().stream(ask));

    expect(events.filter((event) => event.type === "tool-call-start")).toEqual([
      { type: "tool-call-start", id: "call_a", name: "get_weather" },
      { type: "tool-call-start", id: "call_b", name: "get_time" },
    ]);
    const response = finishOf(events);
    expect(response.finishReason).toBe("tool_calls");
    expect(toolCallsOf(response.message)).toEqual([
      { type: "tool_call", id: "call_a", name: "get_weather", arguments: JSON.stringify(longArguments) },
      { type: "tool_call", id: "call_b", name: "get_time", arguments: '{"zone":"Europe/Paris"}' },
    ]);
  });

  it("does not ask for a usage chunk when streamUsage is off", async () => {
    llm.enqueue(script.text("no usage"));
    const events = await collect(chatModel({ streamUsage: false }).stream(ask));
    expect(llm.chatRequests()[0]).not.toHaveProperty("stream_options");
    expect(finishOf(events).usage).toBeUndefined();
  });

  it("retries a failure before the first delta and tells the consumer with a retry event", async () => {
    llm.enqueue(script.error(503), script.text("second try"));
    const model = chatModel({ retryBaseDelayMs: 100 });
    const events = await collect(model.stream(ask));

    const [first] = events;
    expect(first).toMatchObject({ type: "retry", attempt: 1 });
    expect(first?.type === "retry" && first.reason).toContain("HTTP 503");
    expect(sleeps).toHaveLength(1);
    expect(finishOf(events).attempts).toBe(2);
    expect(messageText(finishOf(events).message)).toBe("second try");
    expect(model.usageTotals()).toMatchObject({ calls: 1, retries: 1, failures: 0 });
  });

  it("retries a stream that goes silent before its first delta", async () => {
    llm.enqueue(script.text("too slow to matter", { chunkDelayMs: 1000 }), script.text("quick"));
    const events = await collect(chatModel({ timeoutMs: 250 }).stream(ask));
    expect(events[0]).toMatchObject({ type: "retry", attempt: 1 });
    expect(messageText(finishOf(events).message)).toBe("quick");
  });

  it("throws instead of retrying when the stream breaks after a delta was yielded", async () => {
    llm.enqueue(script.text("one two three four five", { chunkDelayMs: 150 }), script.text("unused"));
    const model = chatModel();
    const seen: ChatStreamEvent[] = [];
    const failure = await (async () => {
      for await (const event of model.stream(ask)) {
        seen.push(event);
        if (event.type === "text-delta") void llm.close();
      }
    })().catch((error: unknown) => error);

    // A cut connection is retryable in itself; only the delta already shown forbids the retry.
    expect(failure).toBeInstanceOf(ModelError);
    expect((failure as ModelError).kind).toBe("network");
    expect(seen.some((event) => event.type === "retry")).toBe(false);
    expect(seen.some((event) => event.type === "finish")).toBe(false);
    expect(llm.chatRequests()).toHaveLength(1);
    expect(model.usageTotals()).toMatchObject({ failures: 1, retries: 0 });
  });

  it("surfaces a broken SSE data line as llm.malformed_response", async () => {
    llm.enqueue(script.malformed());
    const failure = await collect(chatModel({ maxRetries: 0 }).stream(ask)).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "llm.malformed_response" });
  });

  it("surfaces a stream without any choice data as llm.malformed_response", async () => {
    llm.enqueue(script.emptyChoices());
    const failure = await collect(chatModel({ maxRetries: 0 }).stream(ask)).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "llm.malformed_response" });
    expect((failure as Error).message).toContain("without any choice data");
  });

  it("surfaces a 401 as llm.auth without a retry event", async () => {
    const events: ChatStreamEvent[] = [];
    const failure = await (async () => {
      for await (const event of chatModel({ apiKey: "sk-wrong-stream-key" }).stream(ask)) events.push(event);
    })().catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "llm.auth" });
    expect((failure as Error).message).not.toContain("sk-wrong-stream-key");
    expect(events).toEqual([]);
  });

  it("stops with llm.aborted when the caller aborts mid-stream", async () => {
    llm.enqueue(script.text("a b c d e f g h", { chunkDelayMs: 100 }));
    const controller = new AbortController();
    const started = performance.now();
    const failure = await (async () => {
      for await (const event of chatModel().stream({ ...ask, signal: controller.signal })) {
        if (event.type === "text-delta") controller.abort();
      }
    })().catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "llm.aborted" });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("closes the HTTP stream when the consumer stops early", async () => {
    // A raw SSE server that would stream for seconds and tells us when the client hung up.
    let closedEarly: () => void = () => {};
    const hungUp = new Promise<void>((resolve) => {
      closedEarly = resolve;
    });
    const server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.on("close", () => {
        if (!response.writableFinished) closedEarly();
      });
      let sent = 0;
      const timer = setInterval(() => {
        sent += 1;
        const chunk = { choices: [{ index: 0, delta: { content: `w${sent} ` }, finish_reason: null }] };
        response.write(`data: ${JSON.stringify(chunk)}\n\n`);
        if (sent === 100) {
          clearInterval(timer);
          response.end("data: [DONE]\n\n");
        }
      }, 30);
      response.on("close", () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    try {
      const model = chatModel({ baseURL: `http://127.0.0.1:${port}/v1` });
      for await (const event of model.stream(ask)) {
        if (event.type === "text-delta") break;
      }
      const outcome = await Promise.race([
        hungUp.then(() => "closed"),
        new Promise((resolve) => setTimeout(() => resolve("still open"), 1000)),
      ]);
      expect(outcome).toBe("closed");
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
