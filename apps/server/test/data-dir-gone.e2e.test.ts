import { rename } from "node:fs/promises";
import { script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
let restore: (() => Promise<void>) | undefined;
afterEach(async () => {
  await restore?.();
  restore = undefined;
  await running?.close();
  running = undefined;
});

describe("the data directory disappears while the server runs", () => {
  it("turns /readyz false with one clear error, answers 503 storage.missing instead of 500, and recovers when it is back", async () => {
    running = await startTestServer();
    const server = running;
    server.llm.setFallback(() => script.text("Hello."));
    await server.client.chat.completions.create({
      model: "almanac",
      user: "gone",
      messages: [{ role: "user", content: "hi" }],
    });
    // The directory goes while the server runs, not while it still starts or records the turn: the consolidation's
    // start (a turn after ready) and the turn's statistics are written once this resolves.
    await server.server.app.consolidation?.start();
    await server.server.app.stats.journal.flush();
    const moved = `${server.home}.moved`;
    await rename(server.home, moved);
    restore = () => rename(moved, server.home);

    const ready = await server.api("/readyz");
    expect(ready.status).toBe(503);
    const readiness = (await ready.json()) as { checks: { storage: Record<string, unknown> } };
    expect(readiness.checks.storage).toMatchObject({ ok: false, code: "storage.missing" });
    expect(String(readiness.checks.storage.hint)).toContain("restart Almanac");

    for (const path of ["/api/sessions", `/api/sessions/${encodeURIComponent("api:default:api:new-one")}`]) {
      const response = await server.api(path);
      expect(response.status, path).not.toBe(500);
    }
    const chat = await server.api("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({
        model: "almanac",
        user: "other",
        messages: [{ role: "user", content: "still there?" }],
      }),
    });
    expect(chat.status).toBe(503);
    expect(await chat.json()).toMatchObject({ error: { code: "storage.missing" } });
    expect(server.logs.join("")).not.toMatch(/"stack"/);

    await rename(moved, server.home);
    restore = undefined;
    expect((await server.api("/readyz")).status).toBe(200);
  });
});
