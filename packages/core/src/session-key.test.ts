import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isAlmanacError } from "./errors.js";
import {
  formatSessionKey,
  HASHED_STEM_PREFIX_LENGTH,
  isSessionKey,
  MAX_PLAIN_STEM_LENGTH,
  parseSessionKey,
  type SessionKeyParts,
  sessionKeyToFileStem,
} from "./session-key.js";

function errorCode(action: () => unknown): string | undefined {
  try {
    action();
  } catch (error) {
    return isAlmanacError(error) ? error.code : "not-an-almanac-error";
  }
  return undefined;
}

// Parts drawn from all of Unicode (well-formed), biased towards the characters the encodings care about.
const part = fc.oneof(
  fc.string({ unit: fc.constantFrom(":", "%", "A", "a", ".", "~", "3", "/", "é", "😀"), minLength: 1 }),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 30 }),
  fc.string({ minLength: 1, maxLength: 90 }),
);
const partsArbitrary: fc.Arbitrary<SessionKeyParts> = fc.record(
  {
    channel: part,
    account: part,
    kind: fc.stringMatching(/^[a-z]{1,8}$/),
    id: part,
    thread: part,
  },
  { requiredKeys: ["channel", "account", "kind", "id"] },
);

// Few characters and short parts, so that pairs of distinct keys are often near-misses of each other.
const nearPart = fc.string({
  unit: fc.constantFrom(":", "%", "2", "5", "3", "A", "a", "."),
  minLength: 1,
  maxLength: 4,
});
const nearPartsArbitrary: fc.Arbitrary<SessionKeyParts> = fc.record(
  {
    channel: nearPart,
    account: fc.constant("x"),
    kind: fc.constantFrom("dm", "d"),
    id: nearPart,
    thread: nearPart,
  },
  { requiredKeys: ["channel", "account", "kind", "id"] },
);

describe("formatSessionKey and parseSessionKey", () => {
  it("formats plain parts as colon-separated text, with and without a thread", () => {
    expect(formatSessionKey({ channel: "discord", account: "main", kind: "group", id: "42" })).toBe(
      "discord:main:group:42",
    );
    expect(
      formatSessionKey({ channel: "discord", account: "main", kind: "thread", id: "42", thread: "7" }),
    ).toBe("discord:main:thread:42:7");
  });

  it("escapes colons and percent signs inside parts so parsing gives the parts back", () => {
    const parts = { channel: "web", account: "a:b", kind: "api", id: "100%:%3A", thread: "x" };
    const key = formatSessionKey(parts);
    expect(key).toBe("web:a%3Ab:api:100%25%3A%253A:x");
    expect(parseSessionKey(key)).toEqual(parts);
  });

  it("round-trips any well-formed parts exactly, in both directions", () => {
    fc.assert(
      fc.property(partsArbitrary, (parts) => {
        const key = formatSessionKey(parts);
        const parsed = parseSessionKey(key);
        expect(parsed).toEqual(parts);
        expect(formatSessionKey(parsed)).toBe(key);
      }),
    );
  });

  it("leaves the thread out of the parsed parts when the key has none", () => {
    expect(parseSessionKey("feishu:bot:dm:ou_1")).toStrictEqual({
      channel: "feishu",
      account: "bot",
      kind: "dm",
      id: "ou_1",
    });
  });

  it("accepts kinds beyond the known ones as long as they are lowercase letters", () => {
    expect(parseSessionKey("slack:w:channel:C1").kind).toBe("channel");
  });

  it.each([
    ["too few parts", "web:main:dm"],
    ["too many parts", "web:main:thread:1:2:3"],
    ["an empty part", "web::dm:1"],
    ["an empty thread", "web:main:dm:1:"],
    ["an upper-case kind", "web:main:DM:1"],
    ["a kind with digits", "web:main:dm2:1"],
    ["a stray percent escape", "web:main:dm:a%20b"],
    ["a lower-case escape (not canonical)", "web:main:dm:a%3ab"],
    ["a lone surrogate", "web:main:dm:\uD800"],
    ["empty text", ""],
  ])("rejects %s with session.key_invalid", (_label, text) => {
    expect(errorCode(() => parseSessionKey(text))).toBe("session.key_invalid");
    expect(isSessionKey(text)).toBe(false);
  });

  it("names the problem in the error message", () => {
    expect(() => parseSessionKey("web:main:dm")).toThrow(/expected 4 or 5 parts.*found 3/);
    expect(() => parseSessionKey("web:main:Group:1")).toThrow(/kind "Group" must be lowercase/);
  });

  it("refuses to format parts it could not parse back", () => {
    expect(errorCode(() => formatSessionKey({ channel: "", account: "a", kind: "dm", id: "1" }))).toBe(
      "session.key_invalid",
    );
    expect(errorCode(() => formatSessionKey({ channel: "c", account: "a", kind: "d m", id: "1" }))).toBe(
      "session.key_invalid",
    );
  });
});

describe("sessionKeyToFileStem", () => {
  it("keeps lowercase letters, digits, dot, dash and underscore and escapes everything else", () => {
    expect(sessionKeyToFileStem("web:main:dm:user_1.x-y")).toBe("web%3Amain%3Adm%3Auser_1.x-y");
    expect(sessionKeyToFileStem("Web:main:dm:Ab%25~/é")).toBe("%57eb%3Amain%3Adm%3A%41b%2525%7E%2F%C3%A9");
  });

  it("escapes a leading dot so no stem is a hidden file", () => {
    expect(sessionKeyToFileStem(".web:main:dm:1")).toBe("%2Eweb%3Amain%3Adm%3A1");
  });

  it("produces only characters that are safe in file names everywhere", () => {
    fc.assert(
      fc.property(partsArbitrary, (parts) => {
        const stem = sessionKeyToFileStem(formatSessionKey(parts));
        expect(stem).toMatch(/^[a-z0-9_%~-][a-zA-Z0-9._%~-]*$/);
        expect(Buffer.byteLength(stem)).toBeLessThanOrEqual(HASHED_STEM_PREFIX_LENGTH + 1 + 64);
      }),
    );
  });

  it("hashes long keys to a bounded stem that keeps a readable prefix", () => {
    const key = `web:main:dm:${"x".repeat(300)}`;
    const stem = sessionKeyToFileStem(key);
    expect(stem).toMatch(/^web%3Amain%3Adm%3Ax+~[0-9a-f]{64}$/);
    expect(stem.indexOf("~")).toBe(HASHED_STEM_PREFIX_LENGTH);
    const atLimit = `web:main:dm:${"x".repeat(MAX_PLAIN_STEM_LENGTH - "web%3Amain%3Adm%3A".length)}`;
    expect(sessionKeyToFileStem(atLimit)).not.toContain("~");
  });

  it("gives keys that share a long prefix different hashed stems", () => {
    const prefix = `web:main:dm:${"y".repeat(200)}`;
    expect(sessionKeyToFileStem(`${prefix}a`)).not.toBe(sessionKeyToFileStem(`${prefix}b`));
  });

  it("gives plain stems that decode back to their key even after case folding, which makes them injective", () => {
    const decode = (stem: string): string => {
      const bytes: number[] = [];
      for (let index = 0; index < stem.length; index += 1) {
        if (stem[index] === "%") {
          bytes.push(Number.parseInt(stem.slice(index + 1, index + 3), 16));
          index += 2;
        } else {
          bytes.push(stem.charCodeAt(index));
        }
      }
      return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
    };
    fc.assert(
      fc.property(partsArbitrary, (parts) => {
        const key = formatSessionKey(parts);
        const stem = sessionKeyToFileStem(key);
        fc.pre(!stem.includes("~"));
        expect(decode(stem.toLowerCase())).toBe(key);
      }),
      { numRuns: 300 },
    );
  });

  it("maps different keys to different stems, even when compared case-insensitively", () => {
    fc.assert(
      fc.property(fc.oneof(partsArbitrary, nearPartsArbitrary), nearPartsArbitrary, (left, right) => {
        const leftKey = formatSessionKey(left);
        const rightKey = formatSessionKey(right);
        fc.pre(leftKey !== rightKey);
        const leftStem = sessionKeyToFileStem(leftKey);
        const rightStem = sessionKeyToFileStem(rightKey);
        expect(leftStem).not.toBe(rightStem);
        expect(leftStem.toLowerCase()).not.toBe(rightStem.toLowerCase());
      }),
      { numRuns: 1000 },
    );
  });

  it("keeps keys that differ only in letter case apart when case is folded", () => {
    fc.assert(
      fc.property(partsArbitrary, (parts) => {
        const key = formatSessionKey(parts);
        const swapped = formatSessionKey({
          ...parts,
          id: [...parts.id].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join(""),
        });
        fc.pre(swapped !== key);
        expect(sessionKeyToFileStem(swapped).toLowerCase()).not.toBe(sessionKeyToFileStem(key).toLowerCase());
      }),
    );
  });

  it("rejects text that is not a session key", () => {
    expect(errorCode(() => sessionKeyToFileStem("../../etc/passwd"))).toBe("session.key_invalid");
  });
});
