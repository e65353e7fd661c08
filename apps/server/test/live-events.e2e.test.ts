import { summarySections } from "@almanac/compaction";
import { lastUserText, script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { openLiveEvents, type ReceivedEvent } from "./live-events.js";
import { isSummarizerRequest, startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const consoleKey = (conversation: string) => `web:default:web:${conversation}`;

async function consoleTurn(server: TestServer, conversation: string, message: string): Promise<string> {
  const response = await server.api("/api/console/chat", {
    method: "POST",
    body: JSON.stringify({ conversation, message }),
  });
  expect(response.status).toBe(200);
  return response.text();
}

async function stopRunning(server: TestServer, key: string): Promise<boolean> {
  const response = await server.api(`/api/sessions/${encodeURIComponent(key)}/stop`, { method: "POST" });
  return ((await response.json()) as { stopped: boolean }).stopped;
}

const isType = (type: string, sessionKey?: string) => (event: ReceivedEvent) =>
  event.event === type && (sessionKey === undefined || event.data.sessionKey === sessionKey);

describe("live events (GET /api/events)", () => {
  it("needs the admin token", async () => {
    running = await startTestServer();
    const anonymous = await fetch(`${running.server.url}/api/events`);
    expect(anonymous.status).toBe(401);
    const wrong = await fetch(`${running.server.url}/api/events`, {
      headers: { authorization: "Bearer nope" },
    });
    expect(wrong.status).toBe(401);
    // HEAD answers the headers and ends instead of holding a stream open.
    const head = await running.api("/api/events", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toContain("text/event-stream");
  });

  it("starts with a snapshot, then shows a turn start and finish with its tokens, and the queue after /new", async () => {
    running = await startTestServer();
    running.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
    const live = await openLiveEvents(running.server.url);
    const snapshot = await live.waitFor(isType("snapshot"));
    expect(snapshot.data).toMatchObject({
      type: "snapshot",
      sessions: { loaded: [], running: [] },
      queue: { pending: 0, running: 0, parked: 0 },
      index: { state: expect.any(String), files: expect.any(Number), chunks: expect.any(Number) },
      channels: expect.any(Array),
    });

    const key = consoleKey("live");
    await consoleTurn(running, "live", "hello there");
    const created = await live.waitFor(isType("session-created", key));
    const started = await live.waitFor(isType("turn-started", key));
    const finished = await live.waitFor(isType("turn-finished", key));
    expect(started.data).toMatchObject({ channel: "web", kind: "reply", startedAt: expect.any(Number) });
    expect(finished.data).toMatchObject({
      kind: "reply",
      outcome: "ok",
      usage: { promptTokens: expect.any(Number), completionTokens: expect.any(Number) },
      session: { messageCount: 2, turns: 1, contextTokens: expect.any(Number) },
    });
    expect((finished.data.usage as { promptTokens: number }).promptTokens).toBeGreaterThan(0);
    // Ids increase in the order the events happened.
    const ids = [created, started, finished].map((event) => event.id ?? 0);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(3);

    const beforeNew = live.received.length;
    await consoleTurn(running, "live", "/new");
    await live.waitFor(isType("session-reset", key), { from: beforeNew });
    const queued = await live.waitFor(isType("queue-changed"), { from: beforeNew });
    const queue = queued.data.queue as Record<string, number>;
    expect(
      (queue.pending ?? 0) + (queue.running ?? 0) + (queue.done ?? 0) + (queue.parked ?? 0),
    ).toBeGreaterThan(0);
    live.close();
  });

  it("says when a session was compacted, with the tokens before and after", async () => {
    running = await startTestServer({ env: { ALMANAC_COMPACTION_MODEL: "compactor" } });
    const summary = summarySections
      .map((heading) => `## ${heading}\n${heading === "Done" ? "Talked about the garden." : "None."}`)
      .join("\n\n");
    running.llm.setFallback((request) =>
      request.model === "compactor"
        ? script.text(summary)
        : isSummarizerRequest(request)
          ? script.text("Nothing worth storing.")
          : script.text("Sure."),
    );
    const key = consoleKey("garden");
    for (let turn = 0; turn < 8; turn += 1) await consoleTurn(running, "garden", `garden note ${turn}`);
    const live = await openLiveEvents(running.server.url);
    await live.waitFor(isType("snapshot"));
    await consoleTurn(running, "garden", "/compact");
    const compacted = await live.waitFor(isType("session-compacted", key));
    expect(compacted.data).toMatchObject({ reason: "command", tokensBefore: expect.any(Number) });
    expect(compacted.data.tokensAfter).toEqual(expect.any(Number));
    const finished = await live.waitFor(isType("turn-finished", key));
    expect(finished.data).toMatchObject({ kind: "command", outcome: "ok", session: { compactions: 1 } });
    live.close();
  });

  it("lists a turn that is running when a client connects in its snapshot", async () => {
    running = await startTestServer();
    running.llm.enqueue(script.text("slow answer", { delayMs: 2_000 }));
    const turn = consoleTurn(running, "slow", "take your time");
    let snapshot: ReceivedEvent | undefined;
    for (let attempt = 0; attempt < 100 && snapshot === undefined; attempt += 1) {
      const live = await openLiveEvents(running.server.url);
      const first = await live.waitFor(isType("snapshot"));
      live.close();
      const runningTurns = (first.data.sessions as { running: unknown[] }).running;
      if (runningTurns.length > 0) snapshot = first;
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(snapshot?.data.sessions).toMatchObject({
      loaded: [consoleKey("slow")],
      running: [
        { sessionKey: consoleKey("slow"), channel: "web", kind: "reply", startedAt: expect.any(Number) },
      ],
    });
    expect(await stopRunning(running, consoleKey("slow"))).toBe(true);
    expect(await turn).toContain('"type":"stopped"');
  });

  it("ends every open stream with a close event when the server shuts down", async () => {
    running = await startTestServer();
    const live = await openLiveEvents(running.server.url);
    await live.waitFor(isType("snapshot"));
    const server = running;
    running = undefined;
    await server.close();
    await live.ended;
    expect(live.received.at(-1)).toMatchObject({ event: "close", data: { reason: "server-shutdown" } });
  });
});
