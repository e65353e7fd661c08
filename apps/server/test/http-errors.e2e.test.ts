import { script } from "@almanac/testkit";
import type { InjectOptions } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const auth = { authorization: `Bearer ${TEST_TOKEN}` };

interface ErrorShape {
  error: { message: string; type: string; code: string };
}

function expectErrorShape(body: unknown, code: string): void {
  expect(body).toEqual({
    error: { message: expect.any(String), type: expect.any(String), code },
  });
}

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("errors in the documented shape", () => {
  it("maps fastify's own errors to Almanac codes, never a raw FST_ code", async () => {
    running = await startTestServer({ withModel: false });
    const app = running.server.app;
    const cases: Array<{
      request: InjectOptions;
      status: number;
      code: string;
    }> = [
      {
        request: {
          method: "POST",
          url: "/v1/chat/completions",
          headers: { ...auth, "content-type": "application/xml" },
          payload: "<hello/>",
        },
        status: 415,
        code: "request.unsupported_media_type",
      },
      {
        request: {
          method: "POST",
          url: "/v1/chat/completions",
          headers: { ...auth, "content-type": "application/json" },
          payload: '{"messages": [',
        },
        status: 400,
        code: "request.malformed_json",
      },
      {
        request: {
          method: "POST",
          url: "/v1/chat/completions",
          headers: { ...auth, "content-type": "application/json" },
          payload: '{"__proto__": {"x": 1}}',
        },
        status: 400,
        code: "request.malformed_json",
      },
      { request: { method: "GET", url: "/api/%zz", headers: auth }, status: 400, code: "request.bad_url" },
      {
        request: { method: "GET", url: "/api/nothing", headers: auth },
        status: 404,
        code: "route.not_found",
      },
      {
        // Longer than find-my-way's default parameter limit (100), which answered a raw 414.
        request: { method: "GET", url: `/api/sessions/api:default:api:${"k".repeat(300)}`, headers: auth },
        status: 404,
        code: "session.not_found",
      },
    ];
    for (const { request, status, code } of cases) {
      const response = await app.inject(request);
      expect(response.statusCode, `${request.method} ${request.url}`).toBe(status);
      expectErrorShape(response.json(), code);
      expect(response.body).not.toContain("FST_");
    }
  });

  it("answers a 300-character memory file name with 400, not 500 (ENAMETOOLONG)", async () => {
    running = await startTestServer({ withModel: false });
    const name = `memory/${"n".repeat(300)}.md`;
    const put = await running.api(`/api/memory/files/${name}`, {
      method: "PUT",
      body: JSON.stringify({ content: "x" }),
    });
    expect(put.status).toBe(400);
    expectErrorShape(await put.json(), "memory.path_refused");
    const get = await running.api(`/api/memory/files/${"M".repeat(300)}.md`);
    expect(get.status).toBe(400);
    expectErrorShape(await get.json(), "memory.path_refused");
    // A long but valid name still works.
    const fine = await running.api(`/api/memory/files/memory/${"f".repeat(150)}.md`, {
      method: "PUT",
      body: JSON.stringify({ content: "fine" }),
    });
    expect(fine.status).toBe(200);
  });

  it("answers an over-long path parameter with 414 for every method and route, and never echoes a path at length", async () => {
    running = await startTestServer({ withModel: false });
    const long = "x".repeat(5_000);
    const paths = [
      `/api/sessions/${long}`,
      `/api/sessions/${long}/reset`,
      `/api/memory/files/${long}`,
      `/${long}`,
    ];
    for (const path of paths) {
      for (const method of ["GET", "POST", "PUT", "DELETE"]) {
        const response = await running.api(path, {
          method,
          ...(method === "GET" || method === "DELETE" ? {} : { body: "{}" }),
        });
        const body = await response.text();
        expect(response.status, `${method} ${path.slice(0, 20)}`).toBe(414);
        expectErrorShape(JSON.parse(body), "request.uri_too_long");
        expect(body.length).toBeLessThan(300);
      }
    }
    const unknown = await running.api(`/api/${"y".repeat(1_000)}`);
    expect(unknown.status).toBe(404);
    expect((await unknown.text()).length).toBeLessThan(400);
  });

  it("answers a turn cut short by shutdown with 503 server.shutting_down, not 499", async () => {
    running = await startTestServer({ env: { ALMANAC_SHUTDOWN_DEADLINE_MS: "300" } });
    running.llm.enqueue(script.hang());
    running.llm.setFallback(() => script.text("later"));
    const pending = running.api("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ user: "late", messages: [{ role: "user", content: "take your time" }] }),
    });
    const server = running;
    await waitFor(() => server.llm.chatRequests().length > 0, 10_000, "the model call");
    const closing = running.server.close();
    const response = await pending;
    expect(response.status).toBe(503);
    const body = (await response.json()) as ErrorShape;
    expect(body.error).toMatchObject({ code: "server.shutting_down", type: "server_error" });
    await closing;
  });
});

describe("secrets stay out of the log", () => {
  it("logs request paths with query values redacted and never the Authorization header", async () => {
    running = await startTestServer({ withModel: false });
    const secret = "query-secret-3f9a7c";
    await running.api(`/api/info?token=${secret}&access_token=${secret}&${secret}`);
    await fetch(`${running.server.url}/api/sessions?token=${secret}`);
    await fetch(`${running.server.url}/v1/models?key=${secret}`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const logs = running.logs.join("");
    expect(logs).toContain("token=[redacted]");
    expect(logs).toContain("/api/info?");
    expect(logs).not.toContain(secret);
    expect(logs).not.toContain(TEST_TOKEN);
  });
});
