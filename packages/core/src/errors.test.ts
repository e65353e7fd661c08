import { describe, expect, it } from "vitest";
import { describeError, InternalError, isAlmanacError, ProviderError, UserError } from "./errors.js";

describe("errors", () => {
  it("carry a string code, a category and the cause", () => {
    const cause = new Error("root");
    const error = new UserError("config.invalid", "bad value", { cause });
    expect(error.code).toBe("config.invalid");
    expect(error.category).toBe("user");
    expect(error.cause).toBe(cause);
    expect(error.name).toBe("UserError");
    expect(isAlmanacError(error)).toBe(true);
    expect(isAlmanacError(new Error("plain"))).toBe(false);
  });

  it("provider errors say whether they can be retried and after how long", () => {
    const error = new ProviderError("llm.rate_limit", "slow down", {
      isRetryable: true,
      retryAfterMs: 1000,
      status: 429,
    });
    expect(error.category).toBe("provider");
    expect(error.isRetryable).toBe(true);
    expect(error.retryAfterMs).toBe(1000);
    expect(error.status).toBe(429);
  });

  it("describes any thrown value safely", () => {
    expect(describeError(new InternalError("test.failure", "broken"))).toBe("test.failure: broken");
    expect(describeError(new Error("plain"))).toBe("plain");
    expect(describeError("text")).toBe("text");
  });
});
