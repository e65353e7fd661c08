import { type IncomingHttpHeaders, request } from "node:http";
import { formatSessionKey, sessionKeyToFileStem } from "@almanac/core";
import { lastUserText, type RecordedChatRequest, script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  readTranscriptLines,
  startTestServer,
  TEST_MODEL_KEY,
  TEST_TOKEN,
  type TestServer,
} from "./test-server.js";

const echo = (request: RecordedChatRequest) => script.text(`echo: ${lastUserText(request)}`);
const apiStem = (id: string) =>
  sessionKeyToFileStem(formatSessionKey({ channel: "api", account: "default", kind: "api", id }));

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe("chat over the OpenAI-compatible endpoint", () => {
  it("keeps context across turns: the session supplies the history, not the client", async () => {
    running = await startTestServer();
    const { client, llm } = running;
    llm.enqueue(script.text("Nice to meet you, Ann."), script.text("Your name is Ann."));
    const first = await client.chat.completions.create({
      model: "almanac",
      user: "ann",
      messages: [{ role: "user", content: "Hi, I am Ann." }],
    });
    expect(first.choices[0]?.message.content).toBe("Nice to meet you, Ann.");
    // The client sends only the new question; the server must add the earlier exchange itself.
    const second = await client.chat.completions.create({
      model: "almanac",
      user: "ann",
      messages: [{ role: "user", content: "What is my name?" }],
    });
    expect(second.choices[0]?.message.content).toBe("Your name is Ann.");
    const sent = llm
      .chatRequests()[1]
      ?.messages.map((message) => `${message.role}:${String(message.content)}`);
    expect(sent).toEqual([
      expect.stringMatching(/^system:/),
      "user:Hi, I am Ann.",
      "assistant:Nice to meet you, Ann.",
      "user:What is my name?",
    ]);
    expect(second.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(llm.rejections()).toEqual([]);
  });

  it("takes only the newest user message from the request", async () => {
    running = await startTestServer();
    running.llm.setFallback(echo);
    const reply = await running.client.chat.completions.create({
      model: "almanac",
      user: "bob",
      messages: [
        { role: "system", content: "ignored: the server has its own prompt" },
        { role: "user", content: "old question the client remembers" },
        { role: "assistant", content: "old answer" },
        { role: "user", content: "new question" },
      ],
    });
    expect(reply.choices[0]?.message.content).toBe("echo: new question");
    expect(running.llm.chatRequests()[0]?.messages.filter((message) => message.role === "user")).toHaveLength(
      1,
    );
  });

  it("streams the reply as server-sent events", async () => {
    running = await startTestServer();
    running.llm.enqueue(script.text("Streaming works across several small deltas."));
    const stream = await running.client.chat.completions.create({
      model: "almanac",
      stream: true,
      user: "streamer",
      messages: [{ role: "user", content: "stream please" }],
    });
    const deltas: string[] = [];
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) deltas.push(choice.delta.content);
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe("Streaming works across several small deltas.");
    expect(finish).toBe("stop");
  });

  it("says in Server-Timing how long the turn waited on the model and how long it took in all", async () => {
    running = await startTestServer();
    running.llm.enqueue(script.text("slow answer", { delayMs: 120 }));
    const { data, response } = await running.client.chat.completions
      .create({ model: "almanac", user: "timed", messages: [{ role: "user", content: "take your time" }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe("slow answer");
    const timing = /^model;dur=([\d.]+);desc="model calls", total;dur=([\d.]+)$/.exec(
      response.headers.get("server-timing") ?? "",
    );
    expect(timing).not.toBeNull();
    const [modelMs, totalMs] = [Number(timing?.[1]), Number(timing?.[2])];
    expect(modelMs).toBeGreaterThanOrEqual(115);
    expect(totalMs).toBeGreaterThanOrEqual(modelMs);
    // A command never calls the model: no timing to report.
    const command = await running.client.chat.completions
      .create({ model: "almanac", user: "timed", messages: [{ role: "user", content: "/status" }] })
      .withResponse();
    expect(command.response.headers.get("server-timing")).toBeNull();
  });

  it("sends a streamed answer's Server-Timing as a trailer, its headers having left before the model answered", async () => {
    running = await startTestServer();
    running.llm.enqueue(script.text("streamed slowly", { delayMs: 120 }));
    const url = new URL(`${running.server.url}/v1/chat/completions`);
    const { headers, body, trailers } = await new Promise<{
      headers: IncomingHttpHeaders;
      body: string;
      trailers: NodeJS.Dict<string>;
    }>((resolve, reject) => {
      const call = request(
        url,
        {
          method: "POST",
          headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
        },
        (response) => {
          let text = "";
          response.setEncoding("utf8");
          response.on("data", (part: string) => {
            text += part;
          });
          response.on("end", () =>
            resolve({ headers: response.headers, body: text, trailers: response.trailers }),
          );
          response.on("error", reject);
        },
      );
      call.on("error", reject);
      call.end(
        JSON.stringify({
          model: "almanac",
          stream: true,
          user: "streamed-timing",
          messages: [{ role: "user", content: "stream and time it" }],
        }),
      );
    });
    expect(headers["content-type"]).toContain("text/event-stream");
    expect(headers.trailer).toBe("server-timing");
    expect(body).toContain("data: [DONE]");
    const timing = /^model;dur=([\d.]+);desc="model calls", total;dur=([\d.]+)$/.exec(
      trailers["server-timing"] ?? "",
    );
    expect(timing).not.toBeNull();
    const [modelMs, totalMs] = [Number(timing?.[1]), Number(timing?.[2])];
    expect(modelMs).toBeGreaterThanOrEqual(115);
    expect(totalMs).toBeGreaterThanOrEqual(modelMs);
  });

  it("keeps two sessions isolated", async () => {
    running = await startTestServer();
    running.llm.setFallback(echo);
    const { client, llm } = running;
    await client.chat.completions.create({
      model: "almanac",
      user: "one",
      messages: [{ role: "user", content: "secret of one" }],
    });
    await client.chat.completions.create(
      { model: "almanac", messages: [{ role: "user", content: "hello from two" }] },
      { headers: { "x-almanac-session": "two" } },
    );
    const second = llm.chatRequests()[1];
    expect(JSON.stringify(second?.messages)).not.toContain("secret of one");
  });

  it("answers a model failure with an error and keeps the session usable", async () => {
    running = await startTestServer();
    running.llm.enqueue(script.error(500), script.text("recovered"));
    await expect(
      running.client.chat.completions.create({
        model: "almanac",
        user: "flaky",
        messages: [{ role: "user", content: "first" }],
      }),
    ).rejects.toMatchObject({ status: 502 });
    const reply = await running.client.chat.completions.create({
      model: "almanac",
      user: "flaky",
      messages: [{ role: "user", content: "second" }],
    });
    expect(reply.choices[0]?.message.content).toBe("recovered");
    // The failed turn's user message is kept: nothing the user said is lost.
    const lines = await readTranscriptLines(running.home, apiStem("flaky"));
    expect(lines.filter((line) => line.role === "user").map((line) => line.text)).toEqual([
      "first",
      "second",
    ]);
  });

  it("keeps per-session order with 200 concurrent sessions of 5 messages each", async () => {
    running = await startTestServer({ env: { ALMANAC_MAX_CONCURRENT_TURNS: "16" } });
    running.llm.setFallback(echo);
    const { client } = running;
    const sessions = Array.from({ length: 200 }, (_, index) => `load-${index}`);
    await Promise.all(
      sessions.flatMap((id) =>
        Array.from({ length: 5 }, (_, turn) =>
          client.chat.completions.create({
            model: "almanac",
            user: id,
            messages: [{ role: "user", content: `${id} #${turn}` }],
          }),
        ),
      ),
    );
    for (const id of sessions) {
      const lines = await readTranscriptLines(running.home, apiStem(id));
      expect(lines).toHaveLength(10);
      for (let index = 0; index < lines.length; index += 2) {
        const user = lines[index];
        const reply = lines[index + 1];
        // Turns never overlap: every reply directly follows the message it answers …
        expect(user?.role).toBe("user");
        expect(reply).toMatchObject({ role: "assistant", text: `echo: ${user?.text}` });
      }
      // … and messages are handled in arrival order.
      const arrivals = lines.filter((line) => line.role === "user").map((line) => line.timestamp);
      expect(arrivals).toEqual([...arrivals].sort((a, b) => a - b));
      expect(new Set(lines.filter((line) => line.role === "user").map((line) => line.text)).size).toBe(5);
    }
    expect(running.llm.rejections()).toEqual([]);
  }, 120_000);

  it("never writes the model API key or the admin token to the log", async () => {
    running = await startTestServer();
    running.llm.setFallback(echo);
    await running.client.chat.completions.create({
      model: "almanac",
      user: "x",
      messages: [{ role: "user", content: "hi" }],
    });
    await running.api("/api/info");
    const text = running.logs.join("");
    expect(text.length).toBeGreaterThan(100);
    expect(text).not.toContain(TEST_MODEL_KEY);
    expect(text).not.toContain("test-admin-token-0123456789");
  });
});
