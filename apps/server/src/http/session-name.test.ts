import { validateHeaderValue } from "node:http";
import { isAlmanacError } from "@almanac/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  checkSessionName,
  decodeSessionHeader,
  encodeSessionHeader,
  MAX_SESSION_NAME_CHARS,
} from "./session-name.js";

const anyName = fc.string({ unit: "binary", minLength: 1, maxLength: 300 });

function codeOf(work: () => unknown): string | undefined {
  try {
    work();
  } catch (error) {
    return isAlmanacError(error) ? error.code : String(error);
  }
  return undefined;
}

describe("the X-Almanac-Session request header", () => {
  it("decodes what encodeURIComponent made, for any text", () => {
    fc.assert(
      fc.property(anyName, (name) => {
        expect(decodeSessionHeader(encodeURIComponent(name))).toBe(name);
      }),
    );
  });

  it("reads raw UTF-8 bytes (which Node hands over as Latin-1 characters) as the same name", () => {
    fc.assert(
      fc.property(
        anyName.filter((name) => !name.includes("%")),
        (name) => {
          expect(decodeSessionHeader(Buffer.from(name, "utf8").toString("latin1"))).toBe(name);
        },
      ),
    );
  });

  it("leaves plain ASCII names as they are and keeps a byte order mark", () => {
    expect(decodeSessionHeader("cli")).toBe("cli");
    expect(decodeSessionHeader("a+b")).toBe("a+b");
    expect(decodeSessionHeader("%EF%BB%BFx")).toBe("\uFEFFx");
  });

  it("refuses a stray percent sign and bytes that are not UTF-8", () => {
    expect(codeOf(() => decodeSessionHeader("50%off"))).toBe("request.invalid");
    expect(codeOf(() => decodeSessionHeader("trailing%"))).toBe("request.invalid");
    expect(codeOf(() => decodeSessionHeader("caf%E9"))).toBe("request.invalid");
    expect(codeOf(() => decodeSessionHeader("caf\u00e9"))).toBe("request.invalid");
  });
});

describe("the X-Almanac-Session response header", () => {
  it("is printable ASCII valid in any header and decodes back with decodeURIComponent", () => {
    fc.assert(
      fc.property(anyName, (key) => {
        const value = encodeSessionHeader(key);
        expect(value).toMatch(/^[\x21-\x7e]+$/);
        expect(() => validateHeaderValue("x-almanac-session", value)).not.toThrow();
        expect(decodeURIComponent(value)).toBe(key);
      }),
    );
  });

  it("keeps an ASCII key readable", () => {
    expect(encodeSessionHeader("api:default:api:Ann_1.x~y-z")).toBe("api:default:api:Ann_1.x~y-z");
    expect(encodeSessionHeader("api:default:api:a%3Ab c")).toBe("api:default:api:a%253Ab%20c");
    expect(encodeSessionHeader("api:default:api:张")).toBe("api:default:api:%E5%BC%A0");
  });
});

describe("session names", () => {
  it("counts the limit in characters, so 256 emoji fit", () => {
    const emoji = "🎉".repeat(MAX_SESSION_NAME_CHARS);
    expect(checkSessionName(emoji, "user")).toBe(emoji);
    expect(codeOf(() => checkSessionName(`${emoji}x`, "user"))).toBe("request.invalid");
    expect(codeOf(() => checkSessionName("", "user"))).toBe("request.invalid");
    expect(checkSessionName("  ", "user")).toBe("  ");
  });
});
