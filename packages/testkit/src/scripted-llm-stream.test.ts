import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { script } from "./script.js";
import { type ScriptedLlm, startScriptedLlm } from "./scripted-llm.js";
import { splitArguments, splitIntoDeltas } from "./scripted-llm-sse.js";

let llm: ScriptedLlm;
let client: OpenAI;
const request = { model: "gpt-test", messages: [{ role: "user" as const, content: "hi" }] };

async function collect(includeUsage: boolean, signal?: AbortSignal): Promise<ChatCompletionChunk[]> {
  const stream = await client.chat.completions.create(
    { ...request, stream: true, ...(includeUsage ? { stream_options: { include_usage: true } } : {}) },
    signal === undefined ? {} : { signal },
  );
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

beforeEach(async () => {
  llm = await startScriptedLlm();
  client = new OpenAI({ baseURL: llm.baseURL, apiKey: "test-key", maxRetries: 0 });
});
afterEach(async () => {
  await llm.close();
});

describe("streamed replies", () => {
  it("streams text as several small deltas that join to the scripted text", async () => {
    const text = "The meeting moved to Thursday at 10:00, room 4.";
    llm.enqueue(script.text(text));
    const chunks = await collect(false);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta.content ?? ""));
    expect(deltas.filter((delta) => delta !== "").length).toBeGreaterThan(3);
    expect(deltas.join("")).toBe(text);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe("stop");
    expect(new Set(chunks.map((chunk) => chunk.id)).size).toBe(1);
    expect(
      chunks.every((chunk) => chunk.object === "chat.completion.chunk" && chunk.model === "gpt-test"),
    ).toBe(true);
  });

  it("streams reasoning as reasoning_content deltas before the text", async () => {
    llm.enqueue(script.text("Yes.", { reasoning: "Check the calendar first." }));
    const chunks = await collect(false);
    const reasoning = chunks
      .flatMap((chunk) =>
        chunk.choices.map((choice) =>
          "reasoning_content" in choice.delta ? String(choice.delta.reasoning_content) : "",
        ),
      )
      .join("");
    expect(reasoning).toBe("Check the calendar first.");
  });

  it("streams tool calls the way OpenAI does and the client's aggregator reassembles them", async () => {
    const args = { query: "quarterly report", limit: 5, tags: ["finance", "2024"] };
    llm.enqueue(
      script.toolCalls(
        [
          { id: "call_a", name: "memory_search", arguments: args },
          { name: "memory_get", arguments: '{"path":"memory/2024-05-01.md"}' },
        ],
        { text: "Searching." },
      ),
    );
    const runner = client.chat.completions.stream(request);
    const completion = await runner.finalChatCompletion();
    const message = completion.choices[0]?.message;
    expect(completion.choices[0]?.finish_reason).toBe("tool_calls");
    expect(message?.content).toBe("Searching.");
    expect(message?.tool_calls).toHaveLength(2);
    expect(message?.tool_calls?.[0]).toMatchObject({
      id: "call_a",
      type: "function",
      function: { name: "memory_search", arguments: JSON.stringify(args) },
    });
    expect(message?.tool_calls?.[1]).toMatchObject({
      type: "function",
      function: { name: "memory_get", arguments: '{"path":"memory/2024-05-01.md"}' },
    });
    expect(message?.tool_calls?.[1]?.id).toMatch(/^call_/);
  });

  it("puts id, type and name only on the first delta of a tool call and fragments after it", async () => {
    llm.enqueue(
      script.toolCalls([{ id: "call_x", name: "f", arguments: { text: "a fairly long argument value" } }]),
    );
    const chunks = await collect(false);
    const toolDeltas = chunks.flatMap((chunk) =>
      chunk.choices.flatMap((choice) => choice.delta.tool_calls ?? []),
    );
    expect(toolDeltas.length).toBeGreaterThan(2);
    expect(toolDeltas[0]).toMatchObject({
      index: 0,
      id: "call_x",
      type: "function",
      function: { name: "f" },
    });
    for (const later of toolDeltas.slice(1)) {
      expect(later.id).toBeUndefined();
      expect(later.function?.name).toBeUndefined();
    }
    expect(toolDeltas.map((delta) => delta.function?.arguments ?? "").join("")).toBe(
      '{"text":"a fairly long argument value"}',
    );
  });

  it("ends with a usage chunk without choices only when include_usage is asked", async () => {
    llm.enqueue(script.text("one two three"), script.text("one two three"));
    const withUsage = await collect(true);
    const last = withUsage.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.completion_tokens).toBeGreaterThan(0);
    expect(last?.usage?.prompt_tokens).toBeGreaterThan(0);
    const withoutUsage = await collect(false);
    expect(withoutUsage.some((chunk) => chunk.usage)).toBe(false);
  });

  it("breaks the stream with an invalid data line for a malformed step", async () => {
    llm.enqueue(script.malformed());
    await expect(collect(false)).rejects.toThrow();
  });

  it("answers an error step with an HTTP error before any event, even when streaming", async () => {
    llm.enqueue(script.error(429, { retryAfter: 2 }));
    const error = await collect(false).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
  });

  it("streams an empty_choices step as a chunk without choices", async () => {
    llm.enqueue(script.emptyChoices());
    const chunks = await collect(false);
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.every((chunk) => chunk.choices.length === 0)).toBe(true);
  });

  it("lets a client abort mid-stream when chunks are spaced by chunkDelayMs", async () => {
    llm.enqueue(script.text("a b c d e f g h i j", { chunkDelayMs: 30 }), script.text("next"));
    const controller = new AbortController();
    const stream = await client.chat.completions.create(
      { ...request, stream: true },
      { signal: controller.signal },
    );
    const seen: string[] = [];
    // The openai client ends the iteration quietly when its own signal aborts.
    for await (const chunk of stream) {
      seen.push(chunk.choices[0]?.delta.content ?? "");
      if (seen.length === 3) controller.abort();
    }
    expect(seen).toHaveLength(3);
    expect(seen.join("")).toBe("a b ");
    expect((await client.chat.completions.create(request)).choices[0]?.message.content).toBe("next");
  });
});

describe("delta splitting", () => {
  it("splits text into word deltas that join back to the exact text", () => {
    for (const text of ["", "one", "  leading and trailing  ", "line\nbreak\n\n", "中文 mixed text"]) {
      expect(splitIntoDeltas(text).join("")).toBe(text);
    }
    expect(splitIntoDeltas("a b c")).toEqual(["a ", "b ", "c"]);
  });

  it("splits arguments into short fragments that join back", () => {
    const json = JSON.stringify({ long: "x".repeat(100) });
    const fragments = splitArguments(json);
    expect(fragments.join("")).toBe(json);
    expect(fragments.every((fragment) => fragment.length <= 16)).toBe(true);
    expect(splitArguments("{}")).toEqual(["{", "}"]);
    expect(splitArguments("")).toEqual([]);
  });
});
