import OpenAI from "openai";
import { afterEach, assert, beforeEach, describe, expect, it } from "vitest";
import { script } from "./script.js";
import { type ScriptedLlm, startScriptedLlm } from "./scripted-llm.js";

let llm: ScriptedLlm;
let client: OpenAI;
const ask = (options: { signal?: AbortSignal; timeout?: number } = {}) =>
  client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] }, options);
const failure = () => ask().catch((caught: unknown) => caught);

beforeEach(async () => {
  llm = await startScriptedLlm();
  client = new OpenAI({ baseURL: llm.baseURL, apiKey: "test-key", maxRetries: 0 });
});
afterEach(async () => {
  await llm.close();
});

describe("error steps", () => {
  it("answers a rate limit with 429, a retry-after header and code rate_limit_exceeded", async () => {
    llm.enqueue(script.error(429, { retryAfter: 1 }));
    const error = await failure();
    assert(error instanceof OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, code: "rate_limit_exceeded", type: "rate_limit_error" });
    const headers = error.headers;
    expect(headers?.get("retry-after")).toBe("1");
    expect(headers?.get("content-type")).toBe("application/json");
  });

  it("lets a 429 carry another code such as insufficient_quota", async () => {
    llm.enqueue(
      script.error(429, { code: "insufficient_quota", message: "You exceeded your current quota" }),
    );
    const error = await failure();
    expect(error).toMatchObject({
      status: 429,
      code: "insufficient_quota",
      message: expect.stringContaining("You exceeded your current quota"),
    });
  });

  it("sends retry-after-ms and extra headers when asked", async () => {
    llm.enqueue(script.error(503, { retryAfterMs: 250, headers: { "x-request-id": "req_1" } }));
    const error = await failure();
    assert(error instanceof OpenAI.InternalServerError);
    const headers = error.headers;
    expect(headers?.get("retry-after-ms")).toBe("250");
    expect(headers?.get("x-request-id")).toBe("req_1");
    expect(error).toMatchObject({ type: "server_error", code: "server_error" });
  });

  it("sends a custom body as given", async () => {
    llm.enqueue({ type: "error", status: 400, body: { error: { message: "bad thing", code: "weird" } } });
    const error = await failure();
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({
      status: 400,
      code: "weird",
      message: expect.stringContaining("bad thing"),
    });
  });

  it("builds a default OpenAI-shaped body for a raw error step", async () => {
    llm.enqueue({ type: "error", status: 500 });
    const response = await fetch(`${llm.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({
      error: { message: "scripted error 500", type: "server_error", param: null, code: "server_error" },
    });
  });
});

describe("broken replies", () => {
  it("answers a malformed step with a 200 body that is not JSON", async () => {
    llm.enqueue(script.malformed());
    const response = await fetch(`${llm.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
  });

  it("makes the openai client fail on a malformed reply", async () => {
    llm.enqueue(script.malformed());
    await expect(ask()).rejects.toThrow();
  });

  it("answers an empty_choices step with choices: []", async () => {
    llm.enqueue(script.emptyChoices());
    const completion = await ask();
    expect(completion.choices).toEqual([]);
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
  });
});

describe("hang", () => {
  it("never answers, so the client's timeout fires", async () => {
    llm.enqueue(script.hang());
    const started = Date.now();
    const error = await ask({ timeout: 150 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it("ends when the client aborts, and the server keeps answering later requests", async () => {
    llm.enqueue(script.hang(), script.text("after"));
    const controller = new AbortController();
    const pending = ask({ signal: controller.signal }).catch((caught: unknown) => caught);
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toBeInstanceOf(OpenAI.APIUserAbortError);
    expect((await ask()).choices[0]?.message.content).toBe("after");
  });
});
