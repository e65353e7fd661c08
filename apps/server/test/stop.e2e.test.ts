import { rm } from "node:fs/promises";
import { sessionKeyToFileStem } from "@almanac/core";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type EventClient, type ReceivedEvent, readEvents } from "./live-events.js";
import { readTranscriptLines, startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
/** What a restarted server does not own (the first server's model and data directory). */
const leftovers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  await running?.close();
  running = undefined;
  for (const cleanup of leftovers.splice(0)) await cleanup();
});

const SLOW_TEXT = Array.from({ length: 60 }, (_, index) => `word${index}`).join(" ");
const consoleKey = (conversation: string) => `web:default:web:${conversation}`;
const stopPath = (key: string) => `/api/sessions/${encodeURIComponent(key)}/stop`;
const ofType = (type: string) => (event: ReceivedEvent) => event.data.type === type;

/** Starts a console turn and returns its event stream (the reply arrives while the test acts). */
async function startConsoleTurn(
  server: TestServer,
  conversation: string,
  message: string,
): Promise<EventClient> {
  const response = await server.api("/api/console/chat", {
    method: "POST",
    body: JSON.stringify({ conversation, message }),
  });
  expect(response.status).toBe(200);
  return readEvents(response);
}

async function stop(server: TestServer, key: string): Promise<unknown> {
  const response = await server.api(stopPath(key), { method: "POST" });
  expect(response.status).toBe(200);
  return response.json();
}

interface StoredMessage {
  readonly role: string;
  readonly marks: string[];
  readonly content: Array<{ type: string; text?: string }>;
}

async function storedMessages(server: TestServer, key: string): Promise<StoredMessage[]> {
  const response = await server.api(`/api/sessions/${encodeURIComponent(key)}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { messages: StoredMessage[] }).messages;
}

const textOf = (message: StoredMessage) => message.content.map((block) => block.text ?? "").join("");
const sentRoles = (request: RecordedChatRequest | undefined) =>
  request?.messages.map((message) => message.role) ?? [];

describe("stopping a running reply (POST /api/sessions/{key}/stop)", () => {
  it("cuts the streamed reply, keeps the partial text marked [stopped], and the next turn and a restart work", async () => {
    running = await startTestServer();
    const key = consoleKey("stop-me");
    running.llm.enqueue(script.text(SLOW_TEXT, { chunkDelayMs: 40 }));
    const turn = await startConsoleTurn(running, "stop-me", "write a long answer");
    await turn.waitFor(ofType("delta"));
    expect(await stop(running, key)).toEqual({ stopped: true });
    const stopped = await turn.waitFor(ofType("stopped"));
    await turn.ended;
    const streamed = turn.received
      .filter(ofType("delta"))
      .map((event) => String(event.data.text))
      .join("");
    expect(streamed.length).toBeGreaterThan(0);
    expect(streamed.length).toBeLessThan(SLOW_TEXT.length);
    expect(stopped.data).toEqual({
      type: "stopped",
      text: `${streamed.trimEnd()}\n\n[stopped]`,
      sessionKey: key,
    });
    expect(turn.received.some(ofType("error"))).toBe(false);
    // Nothing runs any more.
    expect(await stop(running, key)).toEqual({ stopped: false });

    const afterStop = await storedMessages(running, key);
    expect(afterStop.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(afterStop[1]?.marks).toEqual(["stopped"]);
    expect(textOf(afterStop[1] as StoredMessage)).toBe(stopped.data.text);

    running.llm.enqueue(script.text("Here is the short version."));
    const next = await startConsoleTurn(running, "stop-me", "shorter please");
    expect((await next.waitFor(ofType("done"))).data.text).toBe("Here is the short version.");
    // The model saw the interrupted answer as it was kept.
    const request = running.llm.chatRequests().at(-1);
    expect(sentRoles(request)).toEqual(["system", "user", "assistant", "user"]);
    expect(String(request?.messages[2]?.content)).toBe(stopped.data.text);

    const { home, llm } = running;
    await running.server.close();
    leftovers.push(
      () => llm.close(),
      () => rm(home, { recursive: true, force: true }),
    );
    running = await startTestServer({ home, llm });
    const restarted = await storedMessages(running, key);
    expect(restarted.map((message) => [message.role, textOf(message)])).toEqual([
      ["user", "write a long answer"],
      ["assistant", stopped.data.text],
      ["user", "shorter please"],
      ["assistant", "Here is the short version."],
    ]);
    const transcript = await readTranscriptLines(home, sessionKeyToFileStem(key));
    expect(transcript.map((line) => line.text)).toEqual(restarted.map(textOf));
    llm.enqueue(script.text("Still here after the restart."));
    const third = await startConsoleTurn(running, "stop-me", "are you there?");
    expect((await third.waitFor(ofType("done"))).data.text).toBe("Still here after the restart.");
    expect(llm.rejections()).toEqual([]);
  });

  it("never splits a tool call from its result when the stop comes in a later step", async () => {
    running = await startTestServer();
    const key = consoleKey("tools");
    running.llm.enqueue(
      script.toolCalls([{ name: "memory_search", arguments: { query: "tides" } }]),
      script.text(SLOW_TEXT, { chunkDelayMs: 40 }),
    );
    const turn = await startConsoleTurn(running, "tools", "what do you know about tides?");
    await turn.waitFor(ofType("delta"));
    expect(await stop(running, key)).toEqual({ stopped: true });
    await turn.waitFor(ofType("stopped"));
    const messages = await storedMessages(running, key);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(messages[3]?.marks).toEqual(["stopped"]);
    // The strict model refuses unpaired tool calls: the next turn's request proves the history is whole.
    running.llm.enqueue(script.text("ok"));
    const next = await startConsoleTurn(running, "tools", "go on");
    expect((await next.waitFor(ofType("done"))).data.text).toBe("ok");
    expect(running.llm.rejections()).toEqual([]);
  });

  it("is not an error for the channel the message came from (the OpenAI-compatible endpoint answers 200)", async () => {
    running = await startTestServer();
    running.llm.enqueue(script.text(SLOW_TEXT, { delayMs: 5_000 }));
    const reply = running.client.chat.completions.create({
      model: "almanac",
      user: "stopper",
      messages: [{ role: "user", content: "take your time" }],
    });
    const key = "api:default:api:stopper";
    let stopped: unknown = { stopped: false };
    for (let attempt = 0; attempt < 200; attempt += 1) {
      stopped = await stop(running, key);
      if ((stopped as { stopped: boolean }).stopped) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(stopped).toEqual({ stopped: true });
    const answer = await reply;
    expect(answer.choices[0]?.message.content).toBe("[stopped]");
  });

  it("answers false for a session with nothing running and 400 for a malformed key, and needs the token", async () => {
    running = await startTestServer();
    expect(await stop(running, consoleKey("idle"))).toEqual({ stopped: false });
    const malformed = await running.api(stopPath("not-a-session-key"), { method: "POST" });
    expect(malformed.status).toBe(400);
    const anonymous = await fetch(`${running.server.url}${stopPath(consoleKey("idle"))}`, { method: "POST" });
    expect(anonymous.status).toBe(401);
  });
});
