import { createServer } from "node:http";
import { createMessage, messageText } from "@almanac/core";
import { createRecordingLogger, type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError, type ModelErrorKind } from "./model-error.js";
import { createOpenAIChatModel, type OpenAIChatModelConfig } from "./openai-chat-model.js";

const apiKey = "sk-test-failure-secret-4d2e8b";
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

/** Awaits a rejection, checks it is a ModelError of `kind` naming model and host, with the key nowhere in it. */
async function expectModelError(
  promise: Promise<unknown>,
  kind: ModelErrorKind,
  baseURL: string = llm.baseURL,
): Promise<ModelError> {
  const error = await promise.then(
    () => {
      throw new Error(`expected llm.${kind}, but the call succeeded`);
    },
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(ModelError);
  const modelError = error as ModelError;
  expect(modelError.code).toBe(`llm.${kind}`);
  expect(modelError.message).not.toContain(apiKey);
  expect(String(modelError.cause)).not.toContain(apiKey);
  expect(modelError.message).toContain('"scripted-model"');
  expect(modelError.message).toContain(new URL(baseURL).host);
  return modelError;
}

describe("createOpenAIChatModel — retries", () => {
  it("waits the Retry-After of a 429 before retrying, and logs the retry without the key", async () => {
    llm.enqueue(script.error(429, { retryAfter: 1 }), script.text("after the wait"));
    const logger = createRecordingLogger([], { levels: ["warn"] });
    const model = chatModel({ logger });
    const response = await model.complete(ask);

    expect(messageText(response.message)).toBe("after the wait");
    expect(response.attempts).toBe(2);
    expect(sleeps).toEqual([1000]);
    expect(model.usageTotals().retries).toBe(1);
    expect(logger.entries[0]?.fields).toMatchObject({
      kind: "rate_limit",
      status: 429,
      attempt: 1,
      delayMs: 1000,
    });
    expect(JSON.stringify(logger.entries)).not.toContain(apiKey);
  });

  it("really waits about a second for Retry-After: 1 with the default sleep", async () => {
    llm.enqueue(script.error(429, { retryAfter: 1 }), script.text("ok"));
    const model = createOpenAIChatModel({ baseURL: llm.baseURL, apiKey, model: "scripted-model" });
    const started = performance.now();
    await model.complete(ask);
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
    const [first, second] = llm.requests;
    expect((second?.receivedAt ?? 0) - (first?.receivedAt ?? 0)).toBeGreaterThanOrEqual(950);
  });

  it("surfaces a rate limit whose Retry-After is longer than maxRetryAfterMs without waiting", async () => {
    llm.enqueue(script.error(429, { retryAfter: 120 }), script.text("never"));
    const error = await expectModelError(chatModel({ maxRetryAfterMs: 60_000 }).complete(ask), "rate_limit");
    expect(error.retryAfterMs).toBe(120_000);
    expect(sleeps).toEqual([]);
    expect(llm.chatRequests()).toHaveLength(1);
  });

  it("retries a 500 with a jittered backoff below the base delay and then succeeds", async () => {
    llm.enqueue(script.error(500), script.text("recovered"));
    const response = await chatModel({ retryBaseDelayMs: 200 }).complete(ask);
    expect(messageText(response.message)).toBe("recovered");
    expect(response.attempts).toBe(2);
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(0);
    expect(sleeps[0]).toBeLessThan(200);
  });

  it("surfaces llm.server after maxRetries + 1 attempts when the server keeps failing", async () => {
    const model = chatModel({ maxRetries: 2 });
    const error = await expectModelError(model.complete(ask), "server");
    expect(error.status).toBe(500);
    expect(error.message).toContain("script exhausted");
    expect(llm.chatRequests()).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
    expect(model.usageTotals()).toMatchObject({ calls: 1, failures: 1, retries: 2 });
  });

  it("retries a malformed JSON body and succeeds on the next attempt", async () => {
    llm.enqueue(script.malformed(), script.text("clean"));
    const response = await chatModel().complete(ask);
    expect(messageText(response.message)).toBe("clean");
    expect(response.attempts).toBe(2);
  });

  it("surfaces a body that is not valid JSON as llm.malformed_response", async () => {
    llm.enqueue(script.malformed());
    const error = await expectModelError(chatModel({ maxRetries: 0 }).complete(ask), "malformed_response");
    expect(error.message).toContain("not valid JSON");
  });

  it("surfaces a reply without choices as llm.malformed_response", async () => {
    llm.enqueue(script.emptyChoices());
    const error = await expectModelError(chatModel({ maxRetries: 0 }).complete(ask), "malformed_response");
    expect(error.message).toContain("no choices");
  });

  it("retries a network failure and surfaces llm.network when nothing listens", async () => {
    const port = await freePort();
    const model = chatModel({ baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 1 });
    const error = await model.complete(ask).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).kind).toBe("network");
    expect((error as ModelError).message).toContain("ECONNREFUSED");
    expect(sleeps).toHaveLength(1);
  });
});

describe("createOpenAIChatModel — failures that are not retried", () => {
  it("surfaces a wrong API key as llm.auth without retrying and without printing either key", async () => {
    const wrongKey = "sk-wrong-key-should-not-leak";
    const model = chatModel({ apiKey: wrongKey });
    const error = await expectModelError(model.complete(ask), "auth");
    expect(error.status).toBe(401);
    expect(error.message).toContain("HTTP 401");
    expect(error.message).not.toContain(wrongKey);
    expect(llm.chatRequests()).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it("surfaces insufficient_quota as llm.quota without retrying", async () => {
    llm.enqueue(
      script.error(429, { code: "insufficient_quota", message: "You exceeded your current quota" }),
    );
    const error = await expectModelError(chatModel().complete(ask), "quota");
    expect(error.message).toContain("You exceeded your current quota");
    expect(llm.chatRequests()).toHaveLength(1);
  });

  it("surfaces a prompt over the server's context window as llm.context_length without retrying", async () => {
    const small = await startScriptedLlm({ contextWindow: 64 });
    try {
      small.enqueue(script.text("unused"));
      const model = chatModel({ baseURL: small.baseURL });
      const long = createMessage({ role: "user", content: "word ".repeat(200) });
      const error = await expectModelError(
        model.complete({ messages: [long] }),
        "context_length",
        small.baseURL,
      );
      expect(error.status).toBe(400);
      expect(error.isRetryable).toBe(false);
      expect(small.chatRequests()).toHaveLength(1);
      expect(small.pending()).toBe(1);
    } finally {
      await small.close();
    }
  });

  it("surfaces any other 4xx as llm.bad_request without retrying", async () => {
    llm.enqueue(script.error(400, { message: "Invalid value for temperature" }));
    const error = await expectModelError(chatModel().complete(ask), "bad_request");
    expect(error.message).toContain("Invalid value for temperature");
    expect(llm.chatRequests()).toHaveLength(1);
  });

  it("scrubs the key from a provider message that echoes it", async () => {
    llm.enqueue(script.error(400, { message: `bad header Bearer ${apiKey}` }));
    const error = await expectModelError(chatModel().complete(ask), "bad_request");
    expect(error.message).toContain("Bearer [redacted]");
  });
});

describe("createOpenAIChatModel — timeouts and aborts", () => {
  it("times out a hanging request after timeoutMs, retries it, then surfaces llm.timeout", async () => {
    llm.enqueue(script.hang(), script.hang());
    const started = performance.now();
    const error = await expectModelError(
      chatModel({ timeoutMs: 300, maxRetries: 1 }).complete(ask),
      "timeout",
    );
    const elapsed = performance.now() - started;
    expect(llm.chatRequests()).toHaveLength(2);
    expect(elapsed).toBeGreaterThanOrEqual(550);
    expect(elapsed).toBeLessThan(3000);
    expect(error.message).toContain("300 ms");
  });

  it("lets a request's timeoutMs override the model's", async () => {
    llm.enqueue(script.hang());
    const started = performance.now();
    const model = chatModel({ timeoutMs: 60_000, maxRetries: 0 });
    await expectModelError(model.complete({ ...ask, timeoutMs: 200 }), "timeout");
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("times out a body that stalls after the headers arrived", async () => {
    // A 200 whose body never completes: headers first, then silence.
    const stalling = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"choices":');
    });
    await new Promise<void>((resolve) => stalling.listen(0, "127.0.0.1", resolve));
    const address = stalling.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    try {
      const model = chatModel({ baseURL: `http://127.0.0.1:${port}/v1`, timeoutMs: 250, maxRetries: 0 });
      const error = await model.complete(ask).catch((failure: unknown) => failure);
      expect(error).toMatchObject({ code: "llm.timeout" });
    } finally {
      stalling.closeAllConnections();
      await new Promise<void>((resolve) => stalling.close(() => resolve()));
    }
  });

  it("stops promptly with llm.aborted when the caller aborts a hanging request", async () => {
    llm.enqueue(script.hang());
    const controller = new AbortController();
    const model = chatModel();
    const started = performance.now();
    setTimeout(() => controller.abort(), 100);
    await expectModelError(model.complete({ ...ask, signal: controller.signal }), "aborted");
    expect(performance.now() - started).toBeLessThan(1000);
    expect(llm.chatRequests()).toHaveLength(1);
    expect(model.usageTotals()).toMatchObject({ failures: 1, retries: 0 });
  });

  it("stops a retry wait with llm.aborted when the caller aborts", async () => {
    llm.enqueue(script.error(429, { retryAfter: 30 }), script.text("never"));
    const controller = new AbortController();
    const model = createOpenAIChatModel({ baseURL: llm.baseURL, apiKey, model: "scripted-model" });
    const started = performance.now();
    setTimeout(() => controller.abort(), 100);
    await expectModelError(model.complete({ ...ask, signal: controller.signal }), "aborted");
    expect(performance.now() - started).toBeLessThan(1000);
    expect(llm.chatRequests()).toHaveLength(1);
  });

  it("sends nothing when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    await expectModelError(chatModel().complete({ ...ask, signal: controller.signal }), "aborted");
    expect(llm.requests).toHaveLength(0);
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
