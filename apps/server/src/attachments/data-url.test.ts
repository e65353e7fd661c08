import { describe, expect, it } from "vitest";
import { bodyLimitForFiles, checkBodyBesideFiles, dataUrlChars, parseDataUrl } from "./data-url.js";

describe("data URLs as API clients send files", () => {
  it("reads base64 and percent-encoded content with the type they state", () => {
    const png = parseDataUrl("data:image/png;base64,iVBORw0KGgo=");
    expect([...(png?.bytes ?? [])]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(png?.contentType).toBe("image/png");
    const text = parseDataUrl("data:text/plain;charset=utf-8,hello%20world");
    expect(new TextDecoder().decode(text?.bytes)).toBe("hello world");
    expect(text?.contentType).toBe("text/plain");
    expect(parseDataUrl("data:;base64,AAE=")?.contentType).toBeUndefined();
  });

  it("refuses what is not a data URL or not base64", () => {
    expect(parseDataUrl("almanac-file:MEMORY.md")).toBeUndefined();
    expect(parseDataUrl("https://example.com/a.png")).toBeUndefined();
    expect(parseDataUrl("data:image/png;base64,not*base64!")).toBeUndefined();
    expect(parseDataUrl("data:text/plain,%E0%A4%A")).toBeUndefined();
  });

  it("sizes a request body for a file of the limit in base64, never below the server's own limit", () => {
    expect(bodyLimitForFiles(20 * 1_048_576, 1_048_576)).toBe(
      Math.ceil((20 * 1_048_576 * 4) / 3) + 1_048_576,
    );
    expect(bodyLimitForFiles(1024, 5_000_000)).toBe(5_000_000);
  });

  it("holds everything but the files to the server's body limit", () => {
    const messages = [
      {
        role: "user",
        content: [{ type: "image_url", image_url: { url: `data:image/png;base64,${"A".repeat(4000)}` } }],
      },
      { role: "assistant", content: "ok" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] },
    ];
    expect(dataUrlChars(messages)).toBe(4000 + "data:image/png;base64,".length);
    expect(() => checkBodyBesideFiles("5000", dataUrlChars(messages), 2048)).not.toThrow();
    expect(() => checkBodyBesideFiles("5000", 0, 2048)).toThrow(/ALMANAC_BODY_LIMIT_BYTES/);
    expect(() => checkBodyBesideFiles(undefined, 0, 2048)).not.toThrow();
  });
});
