import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe("security headers", () => {
  it("the console page and the API forbid framing, sniffing, referrers and any script but the console's own", async () => {
    running = await startTestServer({ withModel: false });
    for (const path of ["/", "/sessions", "/api/info", "/healthz"]) {
      const response = await running.api(path);
      const headers = response.headers;
      expect(headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(headers.get("referrer-policy"), path).toBe("no-referrer");
      expect(headers.get("x-frame-options"), path).toBe("DENY");
      const policy = headers.get("content-security-policy") ?? "";
      expect(policy, path).toContain("frame-ancestors 'none'");
      expect(policy, path).toContain("script-src 'self'");
      expect(policy, path).toContain("object-src 'none'");
      expect(policy, path).not.toContain("unsafe-eval");
      expect(policy.split(";").find((directive) => directive.trim().startsWith("script-src"))).not.toContain(
        "unsafe-inline",
      );
      await response.body?.cancel();
    }
  });
});
