import { InternalError, UserError } from "@almanac/core";
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from "openai";
import { describe, expect, it } from "vitest";
import { classifyError, type ErrorContext } from "./classify-error.js";
import { ModelError, type ModelErrorKind } from "./model-error.js";

const apiKey = "sk-unit-secret-0123456789";
const context: ErrorContext = {
  operation: "chat",
  model: "gpt-test",
  baseURL: "https://llm.example.com:8443/v1",
  apiKey,
  timeoutMs: 300,
};

function httpError(status: number, error: unknown, headers: Record<string, string> = {}): APIError {
  return APIError.generate(status, { error }, undefined, new Headers(headers));
}

function classify(error: unknown, extra: Partial<ErrorContext> = {}): ModelError {
  const result = classifyError(error, { ...context, ...extra });
  expect(result).toBeInstanceOf(ModelError);
  expect(result.message).not.toContain(apiKey);
  return result as ModelError;
}

describe("classifyError", () => {
  it.each<[number, unknown, ModelErrorKind, boolean]>([
    [401, { message: "Incorrect API key provided", code: "invalid_api_key" }, "auth", false],
    [403, { message: "Forbidden" }, "auth", false],
    [402, { message: "Insufficient credits" }, "quota", false],
    [429, { message: "You exceeded your current quota", code: "insufficient_quota" }, "quota", false],
    [429, { message: "Quota", type: "insufficient_quota", code: null }, "quota", false],
    [429, { message: "Rate limit reached", code: "rate_limit_exceeded" }, "rate_limit", true],
    [400, { message: "Too long", code: "context_length_exceeded" }, "context_length", false],
    [400, { message: "This model's maximum context length is 8192 tokens" }, "context_length", false],
    [400, { message: "prompt is too long: 210000 tokens > 200000 maximum" }, "context_length", false],
    [413, { message: "Too many tokens in the request" }, "context_length", false],
    [400, { message: "Invalid value for temperature" }, "bad_request", false],
    [404, { message: "The model does not exist" }, "bad_request", false],
    [422, { message: "Unprocessable" }, "bad_request", false],
    [408, { message: "Request timeout" }, "timeout", true],
    [409, { message: "Conflict" }, "server", true],
    [500, { message: "Internal error" }, "server", true],
    [503, { message: "Overloaded" }, "server", true],
  ])("maps HTTP %i %j to %s (retryable: %s)", (status, body, kind, retryable) => {
    const error = classify(httpError(status, body));
    expect(error.kind).toBe(kind);
    expect(error.code).toBe(`llm.${kind}`);
    expect(error.isRetryable).toBe(retryable);
    expect(error.status).toBe(status);
  });

  it("writes a message naming the status, the provider's words, the model and the host", () => {
    const error = classify(httpError(429, { message: "Rate limit reached for requests" }));
    expect(error.message).toBe(
      'Rate limited (HTTP 429) from chat model "gpt-test" at llm.example.com:8443: Rate limit reached for requests.',
    );
  });

  it("carries the Retry-After delay of a rate limit", () => {
    const error = classify(httpError(429, { message: "slow" }, { "retry-after": "2" }));
    expect(error.retryAfterMs).toBe(2000);
  });

  it("scrubs the API key when the provider echoes it", () => {
    const error = classify(httpError(401, { message: `Incorrect API key provided: ${apiKey}` }));
    expect(error.message).toContain("[redacted]");
    expect(String((error.cause as Error).message)).not.toContain(apiKey);
  });

  it("classifies SDK connection failures as network and timeouts as timeout", () => {
    const refused = new APIConnectionError({
      cause: new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") }),
    });
    const network = classify(refused);
    expect(network.kind).toBe("network");
    expect(network.message).toContain("ECONNREFUSED");
    const timeout = classify(new APIConnectionTimeoutError());
    expect(timeout.kind).toBe("timeout");
    expect(timeout.message).toContain("300 ms");
    expect(timeout.isRetryable).toBe(true);
  });

  it("says aborted when the caller's signal fired, whatever the SDK threw", () => {
    const controller = new AbortController();
    controller.abort();
    expect(classify(new APIUserAbortError(), { callerSignal: controller.signal }).kind).toBe("aborted");
    expect(classify(new SyntaxError("x"), { callerSignal: controller.signal }).kind).toBe("aborted");
    expect(classify(new APIUserAbortError()).isRetryable).toBe(false);
  });

  it("says timeout when our own attempt timer cut the request", () => {
    expect(classify(new APIUserAbortError(), { timedOut: true }).kind).toBe("timeout");
  });

  it("treats unparsable bodies and unreadable messages as malformed responses", () => {
    expect(classify(new SyntaxError("Unexpected end of JSON input")).kind).toBe("malformed_response");
    expect(classify(new UserError("message.invalid", "Not a valid chat message")).kind).toBe(
      "malformed_response",
    );
  });

  it("treats an error event inside a stream as a server failure", () => {
    const midStream = new APIError(undefined, { message: "upstream died" }, undefined, new Headers());
    const error = classify(midStream);
    expect(error.kind).toBe("server");
    expect(error.message).toContain("upstream died");
  });

  it("recognises undici's socket failures as network errors", () => {
    expect(classify(new TypeError("terminated")).kind).toBe("network");
    const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect(classify(reset).kind).toBe("network");
  });

  it("wraps anything else as an unexpected internal error instead of retrying it", () => {
    const result = classifyError(new RangeError("bug in our code"), context);
    expect(result).toBeInstanceOf(InternalError);
    expect(result.code).toBe("llm.unexpected");
  });

  it("names the embedding model for embedding calls", () => {
    const error = classify(httpError(500, { message: "x" }), { operation: "embeddings" });
    expect(error.message).toContain('embedding model "gpt-test"');
  });
});
