import { formatSessionKey } from "@almanac/core";
import { lastUserText, type RecordedChatRequest, script } from "@almanac/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

const apiKey = (id: string) => formatSessionKey({ channel: "api", account: "default", kind: "api", id });
const webKey = (id: string) => formatSessionKey({ channel: "web", account: "default", kind: "web", id });

/** Every message text the model was sent in one request, to see which history a turn had. */
function sentTexts(request: RecordedChatRequest | undefined): string[] {
  return (request?.messages ?? []).map((message) =>
    typeof message.content === "string" ? message.content : JSON.stringify(message.content),
  );
}

/** Names in other scripts and shapes; each must name one session on every surface. */
const NAMES: ReadonlyArray<readonly [string, string]> = [
  ["Chinese", "张三"],
  ["emoji", "👩🏽‍💻 chat 🎉"],
  ["Arabic (right to left)", "مرحبا بالعالم"],
  ["a newline", "a\nb"],
  ["256 characters, the limit", `长${"名".repeat(254)}🎉`],
  ["percent signs and colons", "50%:off %3A"],
  ["surrounding spaces", "  spaced  "],
  ["URL syntax", "a/b/../c?d=1&e#f+g"],
];

let running: TestServer;
beforeAll(async () => {
  running = await startTestServer();
});
afterAll(async () => {
  await running.close();
});
beforeEach(() => {
  running.llm.reset();
  running.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
});

/** Reads a whole SSE response as its `data:` payloads. */
async function readEvents(response: Response): Promise<string[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .map((frame) => frame.replace(/^data: ?/, ""))
    .filter((data) => data !== "");
}

async function chatOverFetch(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return running.api("/v1/chat/completions", { method: "POST", body: JSON.stringify(body), headers });
}

describe("session names in any script over the OpenAI-compatible endpoint", () => {
  it.each(NAMES)("%s: by user and by header it is one session, streamed or not", async (_label, name) => {
    const { client, llm } = running;
    const marker = `first turn of ${name}`;
    const first = await client.chat.completions
      .create({ model: "almanac", user: name, messages: [{ role: "user", content: marker }] })
      .withResponse();
    expect(first.data.choices[0]?.message.content).toBe(`echo: ${marker}`);
    const header = first.response.headers.get("x-almanac-session") ?? "";
    expect(header).toMatch(/^[\x21-\x7e]+$/);
    expect(decodeURIComponent(header)).toBe(apiKey(name));

    // The same name, percent-encoded in the header, with a stream: the history of the first turn is there.
    const stream = await client.chat.completions
      .create(
        { model: "almanac", stream: true, messages: [{ role: "user", content: "second turn" }] },
        { headers: { "x-almanac-session": encodeURIComponent(name) } },
      )
      .withResponse();
    expect(decodeURIComponent(stream.response.headers.get("x-almanac-session") ?? "")).toBe(apiKey(name));
    let text = "";
    for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe("echo: second turn");
    expect(sentTexts(llm.chatRequests()[1])).toEqual(
      expect.arrayContaining([marker, `echo: ${marker}`, "second turn"]),
    );

    // The stream by `user` lands in the same session too, and the admin API finds it by its key.
    const third = await client.chat.completions.create({
      model: "almanac",
      stream: true,
      user: name,
      messages: [{ role: "user", content: "third turn" }],
    });
    for await (const _chunk of third) {
      // drain
    }
    expect(sentTexts(llm.chatRequests()[2])).toEqual(expect.arrayContaining([marker, "second turn"]));
    const detail = await running.api(`/api/sessions/${encodeURIComponent(apiKey(name))}`);
    expect(detail.status).toBe(200);
    const session = (await detail.json()) as { messages: unknown[] };
    expect(session.messages.length).toBeGreaterThanOrEqual(6);
  });

  it("accepts a raw UTF-8 header as the same name as its percent-encoded form", async () => {
    const name = "张三 raw";
    // Node and undici send header strings byte for byte (Latin-1): this puts the name's UTF-8 bytes on the wire.
    const rawUtf8 = Buffer.from(name, "utf8").toString("latin1");
    const first = await chatOverFetch(
      { model: "almanac", messages: [{ role: "user", content: "raw header turn" }] },
      { "x-almanac-session": rawUtf8 },
    );
    expect(first.status).toBe(200);
    expect(decodeURIComponent(first.headers.get("x-almanac-session") ?? "")).toBe(apiKey(name));
    await running.client.chat.completions.create({
      model: "almanac",
      user: name,
      messages: [{ role: "user", content: "by user" }],
    });
    expect(sentTexts(running.llm.chatRequests()[1])).toContain("raw header turn");
  });

  it.each([
    ["a stray percent sign", "50%off"],
    ["a percent escape that is not UTF-8", "caf%E9"],
    ["raw Latin-1 bytes that are not UTF-8", "caf\u00e9"],
  ])("answers a header with %s with a clear 400 before the model runs", async (_label, value) => {
    const response = await chatOverFetch(
      { model: "almanac", messages: [{ role: "user", content: "hi" }] },
      { "x-almanac-session": value },
    );
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("request.invalid");
    expect(body.error.message).toMatch(/X-Almanac-Session/);
    expect(running.llm.chatRequests()).toHaveLength(0);
  });

  it.each([
    ["an empty user", { user: "" }, {}],
    ["a user over 256 characters", { user: "名".repeat(257) }, {}],
    ["a header over 256 characters", {}, { "x-almanac-session": encodeURIComponent("x".repeat(257)) }],
    ["a user that is not well-formed Unicode", { user: "lone \ud800 surrogate" }, {}],
  ])("answers %s with a 400 before the model runs", async (_label, extra, headers) => {
    const response = await chatOverFetch(
      { model: "almanac", messages: [{ role: "user", content: "hi" }], ...extra },
      headers,
    );
    expect(response.status).toBe(400);
    expect(running.llm.chatRequests()).toHaveLength(0);
  });

  it("ends a stream that fails after it began with an error event and [DONE]", async () => {
    running.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
    running.llm.enqueue(
      script.toolCalls([{ name: "no_such_tool", arguments: {} }], { text: "Let me look that up." }),
      script.error(500),
    );
    const response = await chatOverFetch(
      { model: "almanac", stream: true, user: "张三 fails", messages: [{ role: "user", content: "q" }] },
      {},
    );
    expect(response.status).toBe(200);
    expect(decodeURIComponent(response.headers.get("x-almanac-session") ?? "")).toBe(apiKey("张三 fails"));
    const events = await readEvents(response);
    const text = events
      .slice(0, -2)
      .map((data) => {
        const chunk = JSON.parse(data) as { choices: Array<{ delta: { content?: string } }> };
        return chunk.choices[0]?.delta.content ?? "";
      })
      .join("");
    // What the model already said reaches the client, then the documented error shape, then [DONE].
    expect(text).toBe("Let me look that up.");
    expect(JSON.parse(events.at(-2) ?? "{}")).toEqual({
      error: { message: expect.stringContaining("HTTP 500"), type: "server_error", code: "llm.server" },
    });
    expect(events.at(-1)).toBe("[DONE]");

    // The real client surfaces it as an error rather than a silently cut stream.
    running.llm.enqueue(
      script.toolCalls([{ name: "no_such_tool", arguments: {} }], { text: "Again." }),
      script.error(500),
    );
    const stream = await running.client.chat.completions.create({
      model: "almanac",
      stream: true,
      user: "张三 fails",
      messages: [{ role: "user", content: "q" }],
    });
    await expect(
      (async () => {
        for await (const _chunk of stream) {
          // drain
        }
      })(),
    ).rejects.toBeInstanceOf(OpenAI.APIError);
  });

  it("any well-formed name of 1 to 256 characters round-trips to one session and never gets a 5xx", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "binary", minLength: 1, maxLength: 256 }),
        fc.boolean(),
        fc.boolean(),
        async (name, firstByHeader, streamSecond) => {
          run += 1;
          running.llm.reset();
          running.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
          const marker = `property turn ${run}`;
          const naming = (byHeader: boolean) =>
            byHeader ? { headers: { "x-almanac-session": encodeURIComponent(name) } } : { user: name };
          const first = naming(firstByHeader);
          const response = await chatOverFetch(
            {
              model: "almanac",
              messages: [{ role: "user", content: marker }],
              ...("user" in first ? { user: first.user } : {}),
            },
            "headers" in first ? first.headers : {},
          );
          expect(response.status).toBe(200);
          expect(decodeURIComponent(response.headers.get("x-almanac-session") ?? "")).toBe(apiKey(name));
          await response.arrayBuffer();
          const secondNaming = naming(!firstByHeader);
          const second = await chatOverFetch(
            {
              model: "almanac",
              stream: streamSecond,
              messages: [{ role: "user", content: "and again" }],
              ...("user" in secondNaming ? { user: secondNaming.user } : {}),
            },
            "headers" in secondNaming ? secondNaming.headers : {},
          );
          expect(second.status).toBe(200);
          await second.arrayBuffer();
          expect(sentTexts(running.llm.chatRequests()[1])).toContain(marker);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("session names in the console chat", () => {
  it.each(NAMES)("%s: the conversation streams and names the web session", async (_label, name) => {
    const response = await running.api("/api/console/chat", {
      method: "POST",
      body: JSON.stringify({ conversation: name, message: "hello console" }),
    });
    expect(response.status).toBe(200);
    expect(decodeURIComponent(response.headers.get("x-almanac-session") ?? "")).toBe(webKey(name));
    const events = (await readEvents(response)).map((data) => JSON.parse(data) as { type: string });
    expect(events.at(-1)).toEqual({ type: "done", text: "echo: hello console", sessionKey: webKey(name) });
    const detail = await fetch(`${running.server.url}/api/sessions/${encodeURIComponent(webKey(name))}`, {
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(detail.status).toBe(200);
  });
  it("ends a console stream that fails after it began with an error event naming the cause", async () => {
    running.llm.enqueue(
      script.toolCalls([{ name: "no_such_tool", arguments: {} }], { text: "Looking." }),
      script.error(500),
    );
    const response = await running.api("/api/console/chat", {
      method: "POST",
      body: JSON.stringify({ conversation: "张三 console fails", message: "q" }),
    });
    expect(response.status).toBe(200);
    const events = (await readEvents(response)).map((data) => JSON.parse(data) as Record<string, unknown>);
    expect(
      events
        .filter((event) => event.type === "delta")
        .map((event) => event.text)
        .join(""),
    ).toBe("Looking.");
    expect(events.at(-1)).toMatchObject({ type: "error", code: "llm.server" });
  });
});
