import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, redactQuery, scrubSecrets, serializeRequest } from "./logger.js";

describe("redactQuery", () => {
  it("keeps the path and the keys and replaces every value", () => {
    expect(redactQuery("/api/info")).toBe("/api/info");
    expect(redactQuery("/api/info?token=abc&q=x")).toBe("/api/info?token=[redacted]&q=[redacted]");
    expect(redactQuery("/x?secret-value")).toBe("/x?[redacted]");
    expect(redactQuery("/x?a=1&&b")).toBe("/x?a=[redacted]&&[redacted]");
    expect(redactQuery("/x?")).toBe("/x?");
  });
});

describe("request logging", () => {
  it("writes neither query values nor headers of a request", () => {
    const lines: string[] = [];
    const logger = createLogger(
      "info",
      new Writable({
        write(chunk, _encoding, callback) {
          lines.push(String(chunk));
          callback();
        },
      }),
    );
    const request = {
      method: "GET",
      url: "/api/info?token=s3cr3t",
      host: "localhost",
      ip: "127.0.0.1",
      headers: { authorization: "Bearer s3cr3t" },
    };
    logger.info({ req: request }, "incoming request");
    expect(lines.join("")).not.toContain("s3cr3t");
    expect(serializeRequest(request)).toEqual({
      method: "GET",
      url: "/api/info?token=[redacted]",
      host: "localhost",
      remoteAddress: "127.0.0.1",
      remotePort: undefined,
    });
  });
});

describe("scrubSecrets", () => {
  it("replaces every occurrence of a secret value and leaves short ones alone", () => {
    expect(scrubSecrets("Provided token: abc123SECRET, again abc123SECRET", ["abc123SECRET"])).toBe(
      "Provided token: [redacted], again [redacted]",
    );
    expect(scrubSecrets("the key is 12345", ["12345"])).toBe("the key is 12345");
  });
});
