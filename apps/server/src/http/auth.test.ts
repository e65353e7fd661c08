import { describe, expect, it } from "vitest";
import { tokenMatches } from "./auth.js";

describe("tokenMatches", () => {
  it("accepts only the expected token, whichever token was expected before", () => {
    expect(tokenMatches("first-token-0123456789", "first-token-0123456789")).toBe(true);
    expect(tokenMatches("first-token-012345678", "first-token-0123456789")).toBe(false);
    expect(tokenMatches(undefined, "first-token-0123456789")).toBe(false);
    expect(tokenMatches("first-token-0123456789", "second-token-0123456789")).toBe(false);
    expect(tokenMatches("second-token-0123456789", "second-token-0123456789")).toBe(true);
    expect(tokenMatches("", "second-token-0123456789")).toBe(false);
  });
});
