import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { script } from "./script.js";
import { type ScriptedLlm, startScriptedLlm } from "./scripted-llm.js";

let llm: ScriptedLlm;
let client: OpenAI;
const ask = (content = "hi") =>
  client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content }] });

beforeEach(async () => {
  llm = await startScriptedLlm();
  client = new OpenAI({ baseURL: llm.baseURL, apiKey: "test-key", maxRetries: 0 });
});
afterEach(async () => {
  await llm.close();
});

describe("scripted replies", () => {
  it("answers a text step with an OpenAI-shaped completion for the requested model", async () => {
    llm.enqueue(script.text("Hello there", { reasoning: "User greets me." }));
    const completion = await ask();
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.object).toBe("chat.completion");
    expect(completion.model).toBe("gpt-test");
    expect(completion.choices).toHaveLength(1);
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe("stop");
    expect(choice.message).toMatchObject({
      role: "assistant",
      content: "Hello there",
      reasoning_content: "User greets me.",
    });
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
    expect(completion.usage?.total_tokens).toBe(
      (completion.usage?.prompt_tokens ?? 0) + (completion.usage?.completion_tokens ?? 0),
    );
  });

  it("answers a tool_calls step with JSON arguments, generated ids and finish_reason tool_calls", async () => {
    llm.enqueue(
      script.toolCalls([
        { name: "memory_search", arguments: { query: "OPS-4821" } },
        { id: "call_fixed", name: "read_file", arguments: '{"path":"a.md"}' },
      ]),
    );
    const completion = await ask();
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    const calls = choice.message.tool_calls ?? [];
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      type: "function",
      function: { name: "memory_search", arguments: '{"query":"OPS-4821"}' },
    });
    expect(calls[0]?.id).toMatch(/^call_.+/);
    expect(calls[1]).toMatchObject({
      id: "call_fixed",
      function: { name: "read_file", arguments: '{"path":"a.md"}' },
    });
  });

  it("keeps the text of a tool_calls step as the message content", async () => {
    llm.enqueue(script.toolCalls([{ name: "f", arguments: {} }], { text: "Let me look." }));
    const completion = await ask();
    expect(completion.choices[0]?.message.content).toBe("Let me look.");
  });

  it("reports the usage a step overrides instead of its own counts", async () => {
    llm.enqueue(script.text("ok", { usage: { prompt_tokens: 9000, completion_tokens: 7 } }));
    const completion = await ask();
    expect(completion.usage).toEqual({ prompt_tokens: 9000, completion_tokens: 7, total_tokens: 9007 });
  });

  it("consumes steps in FIFO order and reports how many are pending", async () => {
    llm.enqueue(script.text("first"), script.text("second"));
    expect(llm.pending()).toBe(2);
    expect((await ask()).choices[0]?.message.content).toBe("first");
    expect(llm.pending()).toBe(1);
    expect((await ask()).choices[0]?.message.content).toBe("second");
    expect(llm.pending()).toBe(0);
  });

  it("waits delayMs before answering", async () => {
    llm.enqueue(script.text("late", { delayMs: 120 }));
    const started = Date.now();
    await ask();
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
  });
});

describe("fallback", () => {
  it("answers 500 'script exhausted' when the queue is empty and no fallback is set", async () => {
    const error = await ask().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error).toMatchObject({ status: 500, message: expect.stringContaining("script exhausted") });
  });

  it("asks the fallback for a step, with the recorded request, when the queue is empty", async () => {
    llm.setFallback((request) => script.text(`echo: ${String(request.messages.at(-1)?.content)}`));
    llm.enqueue(script.text("queued"));
    expect((await ask("one")).choices[0]?.message.content).toBe("queued");
    expect((await ask("two")).choices[0]?.message.content).toBe("echo: two");
    expect((await ask("three")).choices[0]?.message.content).toBe("echo: three");
  });

  it("answers 500 naming the failure when the fallback throws", async () => {
    llm.setFallback(() => {
      throw new Error("fallback broke");
    });
    const error = await ask().catch((caught: unknown) => caught);
    expect(error).toMatchObject({
      status: 500,
      code: "testkit_error",
      message: expect.stringContaining("fallback broke"),
    });
  });

  it("awaits an async fallback", async () => {
    llm.setFallback(async () => script.toolCalls([{ name: "later", arguments: {} }]));
    const completion = await ask();
    expect(completion.choices[0]?.message.tool_calls?.[0]).toMatchObject({ function: { name: "later" } });
  });
});

describe("recording", () => {
  it("records every HTTP request and the parsed chat bodies", async () => {
    llm.enqueue(script.text("ok"));
    await client.chat.completions.create({
      model: "gpt-test",
      messages: [{ role: "user", content: "remember OPS-4821" }],
      temperature: 0.2,
    });
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]).toMatchObject({ method: "POST", path: "/v1/chat/completions" });
    expect(llm.requests[0]?.headers.authorization).toBe("Bearer test-key");
    const [recorded] = llm.chatRequests();
    expect(recorded).toMatchObject({
      model: "gpt-test",
      stream: false,
      temperature: 0.2,
      messages: [{ role: "user", content: "remember OPS-4821" }],
    });
    expect(recorded?.rejected).toBeUndefined();
  });

  it("forgets queue, fallback and records on reset", async () => {
    llm.enqueue(script.text("ok"), script.text("unused"));
    llm.setFallback(() => script.text("fallback"));
    await ask();
    llm.reset();
    expect(llm.pending()).toBe(0);
    expect(llm.requests).toHaveLength(0);
    expect(llm.chatRequests()).toHaveLength(0);
    await expect(ask()).rejects.toBeInstanceOf(OpenAI.InternalServerError);
  });
});

describe("server", () => {
  it("lists the configured models", async () => {
    const custom = await startScriptedLlm({ models: ["alpha", "beta"] });
    try {
      const listing = new OpenAI({ baseURL: custom.baseURL, apiKey: "k", maxRetries: 0 });
      const ids: string[] = [];
      for await (const model of listing.models.list()) ids.push(model.id);
      expect(ids).toEqual(["alpha", "beta"]);
      expect((await listing.models.retrieve("beta")).id).toBe("beta");
    } finally {
      await custom.close();
    }
  });

  it("rejects a wrong or missing API key with 401 invalid_api_key, without consuming a step", async () => {
    const guarded = await startScriptedLlm({ apiKey: "secret" });
    try {
      guarded.enqueue(script.text("ok"));
      const wrong = new OpenAI({ baseURL: guarded.baseURL, apiKey: "nope", maxRetries: 0 });
      const error = await wrong.chat.completions
        .create({ model: "m", messages: [{ role: "user", content: "hi" }] })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error).toMatchObject({ status: 401, code: "invalid_api_key", type: "invalid_request_error" });
      const missing = await fetch(`${guarded.baseURL}/models`);
      expect(missing.status).toBe(401);
      expect(guarded.pending()).toBe(1);
      expect(guarded.rejections().map((request) => request.rejected?.code)).toEqual(["invalid_api_key"]);
      const right = new OpenAI({ baseURL: guarded.baseURL, apiKey: "secret", maxRetries: 0 });
      const completion = await right.chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "hi" }],
      });
      expect(completion.choices[0]?.message.content).toBe("ok");
    } finally {
      await guarded.close();
    }
  });

  it("answers unknown paths with an OpenAI-shaped 404", async () => {
    const response = await fetch(`${llm.baseURL}/nothing-here`, { method: "POST", body: "{}" });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toMatchObject({ error: { code: "unknown_url" } });
  });

  it("closes promptly while a hang request is open", async () => {
    llm.enqueue(script.hang());
    const outcome = ask().then(
      () => "answered",
      () => "failed",
    );
    await waitFor(() => llm.requests.length === 1);
    const started = Date.now();
    await llm.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await outcome).toBe("failed");
  });

  it("closes promptly while a delayed reply is waiting", async () => {
    llm.enqueue(script.text("never sent", { delayMs: 20_000 }));
    const outcome = ask().then(
      () => "answered",
      () => "failed",
    );
    await waitFor(() => llm.requests.length === 1);
    const started = Date.now();
    await llm.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await outcome).toBe("failed");
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 2000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met within 2 s");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
