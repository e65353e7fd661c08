import { stat } from "node:fs/promises";
import { join } from "node:path";
import { script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

async function chat(server: TestServer, user: string, content: string): Promise<string> {
  const reply = await server.client.chat.completions.create({
    model: "almanac",
    user,
    messages: [{ role: "user", content }],
  });
  return reply.choices[0]?.message.content ?? "";
}

describe("security and bad input", () => {
  it("answers a missing or wrong token with 401 and no detail, and stays up", async () => {
    running = await startTestServer();
    const url = running.server.url;
    const attempts: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: TEST_TOKEN },
    ];
    for (const headers of attempts) {
      for (const path of ["/api/sessions", "/v1/models", "/metrics"]) {
        const response = await fetch(`${url}${path}`, { headers });
        expect(response.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        const body = (await response.json()) as { error: { code: string; message: string } };
        expect(body.error).toEqual({
          code: "auth.unauthorized",
          message: "Missing or invalid bearer token.",
          type: "authentication_error",
        });
      }
    }
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await running.api("/v1/models")).status).toBe(200);
  });

  it("rejects an oversized body with 413 and malformed JSON with 400, then keeps serving", async () => {
    running = await startTestServer({ env: { ALMANAC_BODY_LIMIT_BYTES: "2048" } });
    running.llm.setFallback(() => script.text("still here"));
    const big = await running.api("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ model: "almanac", messages: [{ role: "user", content: "x".repeat(5000) }] }),
    });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { code: string } }).error.code).toBe("request.too_large");
    const malformed = await running.api("/v1/chat/completions", {
      method: "POST",
      body: '{"model": "almanac", "messages": [',
    });
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe(
      "request.malformed_json",
    );
    const invalid = await running.api("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ messages: [] }),
    });
    expect(invalid.status).toBe(400);
    const noUser = await running.api("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({ messages: [{ role: "assistant", content: "hi" }] }),
    });
    expect(noUser.status).toBe(400);
    expect(await chat(running, "after", "hello")).toBe("still here");
  });

  it("refuses a message over the character limit with 413 before it reaches the model", async () => {
    running = await startTestServer({ env: { ALMANAC_MAX_MESSAGE_CHARS: "100" } });
    await expect(chat(running, "long", "y".repeat(101))).rejects.toMatchObject({ status: 413 });
    expect(running.llm.chatRequests()).toHaveLength(0);
  });

  it("generates an admin token on first start, stores it with mode 0600 and reuses it", async () => {
    running = await startTestServer({ env: { ALMANAC_ADMIN_TOKEN: "" } });
    const tokenFile = join(running.home, "admin-token");
    expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
    const token = running.server.adminToken;
    expect(token).toMatch(/^alm_/);
    const response = await fetch(`${running.server.url}/api/info`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
  });
});

describe("first run with the Qdrant backend but no embedding model", () => {
  it("starts on the embedded SQLite index and says why in the log", async () => {
    running = await startTestServer({
      env: { ALMANAC_INDEX_BACKEND: "qdrant", ALMANAC_QDRANT_URL: "http://127.0.0.1:9" },
    });
    const status = (await (await running.api("/api/memory/index")).json()) as { backend: string };
    expect(status.backend).toBe("sqlite");
    expect(running.logs.join("")).toContain("using the embedded SQLite index until they are set");
  });
});

describe("first run without a model", () => {
  it("starts, says what is missing in /readyz and answers chat with 503 naming the keys", async () => {
    running = await startTestServer({ withModel: false });
    const ready = await fetch(`${running.server.url}/readyz`);
    expect(ready.status).toBe(503);
    const readyBody = (await ready.clone().json()) as { checks: { index: { ok: boolean; backend: string } } };
    expect(readyBody.checks.index).toMatchObject({ ok: true, backend: "sqlite" });
    expect(JSON.stringify(await ready.json())).toContain("ALMANAC_MODEL_BASE_URL");
    const error = await chat(running, "first", "hello").catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 503 });
    expect(String((error as Error).message)).toMatch(/ALMANAC_MODEL_BASE_URL and ALMANAC_MODEL_NAME/);
    // Commands still work without a model.
    expect(await chat(running, "first", "/help")).toContain("/compact");
  });
});

describe("chat commands", () => {
  it("answers /status and /history with real numbers and passes unknown /commands to the model", async () => {
    running = await startTestServer();
    running.llm.setFallback(() => script.text("model answer"));
    await chat(running, "cmd", "remember the number 42");
    const status = await chat(running, "cmd", "/status");
    expect(status).toMatch(/Model: scripted-model/);
    expect(status).toMatch(/Context: \d+ \/ 32000 tokens/);
    expect(status).toMatch(/Turns: 1; compactions: 0/);
    const history = await chat(running, "cmd", "/history");
    expect(history).toMatch(/user messages: 1, \d+ tokens/);
    expect(history).toMatch(/assistant messages: 1/);
    expect(await chat(running, "cmd", "/unknowncommand please")).toBe("model answer");
    expect(running.llm.chatRequests()).toHaveLength(2);
  });

  it("starts fresh on /new and archives the old conversation", async () => {
    running = await startTestServer();
    running.llm.setFallback(() => script.text("ok"));
    await chat(running, "renew", "old topic");
    expect(await chat(running, "renew", "/new")).toMatch(/new conversation/i);
    await chat(running, "renew", "new topic");
    // The summarizer's job for the ended conversation may run after the chat turn and does hold "old topic":
    // look at the chat request that carried the new message.
    const chatTurn = running.llm
      .chatRequests()
      .filter((request) => JSON.stringify(request.messages).includes("new topic"))
      .at(-1);
    expect(chatTurn).toBeDefined();
    expect(JSON.stringify(chatTurn?.messages)).not.toContain("old topic");
  });
});

describe("admin REST", () => {
  it("lists sessions, shows one, resets and deletes it", async () => {
    running = await startTestServer();
    running.llm.setFallback(() => script.text("fine"));
    await chat(running, "adm", "hello admin");
    const list = (await (await running.api("/api/sessions")).json()) as {
      sessions: Array<{
        key: string;
        messageCount: number;
        contextTokens: number;
        turns: number;
        channel: string;
      }>;
    };
    expect(list.sessions).toHaveLength(1);
    const session = list.sessions[0];
    expect(session).toMatchObject({ key: "api:default:api:adm", messageCount: 2, turns: 1, channel: "api" });
    expect(session?.contextTokens).toBeGreaterThan(0);
    const key = encodeURIComponent("api:default:api:adm");
    const detail = (await (await running.api(`/api/sessions/${key}`)).json()) as {
      messages: unknown[];
      contextWindow: number;
    };
    expect(detail.messages).toHaveLength(2);
    expect(detail.contextWindow).toBe(32000);
    expect((await running.api(`/api/sessions/${encodeURIComponent("api:default:api:nobody")}`)).status).toBe(
      404,
    );
    expect((await running.api(`/api/sessions/not-a-key`)).status).toBe(400);
    const compact = await running.api(`/api/sessions/${key}/compact`, { method: "POST", body: "{}" });
    expect(compact.status).toBe(200);
    expect((await running.api(`/api/sessions/${key}/reset`, { method: "POST", body: "{}" })).status).toBe(
      200,
    );
    expect((await running.api(`/api/sessions/${key}`)).status).toBe(404);
    await chat(running, "adm", "again");
    expect((await running.api(`/api/sessions/${key}`, { method: "DELETE" })).status).toBe(200);
    expect(
      ((await (await running.api("/api/sessions")).json()) as { sessions: unknown[] }).sessions,
    ).toHaveLength(0);
  });

  it("serves server info with secrets masked, an OpenAPI document and Prometheus metrics", async () => {
    running = await startTestServer();
    running.llm.setFallback(() => script.text("metrics"));
    await chat(running, "m", "count me");
    const info = (await (await running.api("/api/info")).json()) as {
      model: { configured: boolean };
      config: { model: { apiKey: string } };
    };
    expect(info.model.configured).toBe(true);
    const ready = await fetch(`${running.server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(info.config.model.apiKey).toBe("***");
    const openapi = (await (await running.api("/api/openapi.json")).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(openapi.openapi).toMatch(/^3\./);
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining(["/v1/chat/completions", "/api/sessions"]),
    );
    const metrics = await (await running.api("/metrics")).text();
    expect(metrics).toMatch(/almanac_turns_total\{channel="api",outcome="ok"\} 1/);
    expect(metrics).toMatch(/almanac_model_tokens_total\{model="scripted-model",kind="prompt"\} \d+/);
    expect(metrics).toContain("almanac_session_queue_depth 0");
  });
});
