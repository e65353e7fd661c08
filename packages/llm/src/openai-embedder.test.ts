import {
  deterministicEmbedding,
  encodeFloat32Base64,
  type ScriptedLlm,
  startScriptedLlm,
} from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError } from "./model-error.js";
import { createOpenAIEmbedder, type OpenAIEmbedderConfig } from "./openai-embedder.js";

const apiKey = "sk-test-embed-secret-55aa";
let llm: ScriptedLlm;
let sleeps: number[];

beforeEach(async () => {
  llm = await startScriptedLlm({ apiKey, embeddingDimensions: 64 });
  sleeps = [];
});
afterEach(async () => {
  await llm.close();
});

function embedder(overrides: Partial<OpenAIEmbedderConfig> = {}) {
  return createOpenAIEmbedder({
    baseURL: llm.baseURL,
    apiKey,
    model: "scripted-embedding",
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...overrides,
  });
}

/** A 200 answer with a body of our choosing (the kit's error step sends any status and body). */
function answerWith(body: unknown) {
  llm.enqueueEmbeddings({ type: "error", status: 200, body });
}

function expectVector(actual: readonly number[] | undefined, expected: readonly number[]): void {
  expect(actual).toHaveLength(expected.length);
  for (const [index, value] of expected.entries()) expect(actual?.[index]).toBeCloseTo(value, 6);
}

function bodies(): Array<Record<string, unknown>> {
  return llm
    .embeddingRequests()
    .map((body) => (typeof body === "object" && body !== null ? { ...body } : {}));
}

describe("createOpenAIEmbedder", () => {
  it("splits inputs into batches and returns the vectors in input order", async () => {
    const texts = Array.from({ length: 150 }, (_, index) => `note number ${index} about topic ${index % 7}`);
    const vectors = await embedder({ batchSize: 64 }).embed(texts);

    expect(bodies().map((body) => (Array.isArray(body.input) ? body.input.length : 0))).toEqual([64, 64, 22]);
    expect(vectors).toHaveLength(150);
    for (const index of [0, 63, 64, 127, 128, 149]) {
      expectVector(vectors[index], deterministicEmbedding(texts[index] ?? "", 64));
    }
  });

  it("learns its dimensions from the first response when none are configured", async () => {
    const model = embedder();
    expect(model.dimensions).toBeUndefined();
    await model.embed(["hello"]);
    expect(model.dimensions).toBe(64);
    expect(bodies()[0]).not.toHaveProperty("dimensions");
  });

  it("sends configured dimensions and gets vectors of that size", async () => {
    const model = embedder({ dimensions: 16 });
    expect(model.dimensions).toBe(16);
    const [vector] = await model.embed(["short vectors"]);
    expect(bodies()[0]?.dimensions).toBe(16);
    expectVector(vector, deterministicEmbedding("short vectors", 16));
  });

  it("asks for base64 by default and for floats when configured", async () => {
    await embedder().embed(["a"]);
    await embedder({ encodingFormat: "float" }).embed(["a"]);
    expect(bodies().map((body) => body.encoding_format)).toEqual(["base64", "float"]);
  });

  it("accepts float vectors from a server that ignores the base64 request", async () => {
    answerWith({ data: [{ index: 0, embedding: [0.5, -0.25, 1] }] });
    expect(await embedder().embed(["x"])).toEqual([[0.5, -0.25, 1]]);
  });

  it("puts vectors back in input order when the server lists them out of order", async () => {
    answerWith({
      data: [
        { index: 1, embedding: encodeFloat32Base64([0, 1]) },
        { index: 0, embedding: encodeFloat32Base64([1, 0]) },
      ],
    });
    expect(await embedder().embed(["first", "second"])).toEqual([
      [1, 0],
      [0, 1],
    ]);
  });

  it("returns an empty list for no input without calling the server", async () => {
    expect(await embedder().embed([])).toEqual([]);
    expect(llm.requests).toHaveLength(0);
  });

  it("rejects vectors of another size than configured, without retrying", async () => {
    answerWith({ data: [{ index: 0, embedding: [0.1, 0.2, 0.3, 0.4] }] });
    const failure = await embedder({ dimensions: 3 })
      .embed(["x"])
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "llm.malformed_response", isRetryable: false });
    expect((failure as Error).message).toContain("4 dimensions, not the expected 3");
    expect(llm.embeddingRequests()).toHaveLength(1);
  });

  it("rejects vectors that differ from the learnt size on a later call", async () => {
    const model = embedder();
    await model.embed(["learn 64"]);
    answerWith({ data: [{ index: 0, embedding: [0.1, 0.2] }] });
    await expect(model.embed(["now two"])).rejects.toMatchObject({ code: "llm.malformed_response" });
    expect(model.dimensions).toBe(64);
  });

  it.each([
    ["too few vectors", { data: [{ index: 0, embedding: [1, 0] }] }, "expected 2 vectors, got 1"],
    [
      "a repeated index",
      {
        data: [
          { index: 0, embedding: [1, 0] },
          { index: 0, embedding: [0, 1] },
        ],
      },
      "index 0",
    ],
    [
      "vectors of different sizes",
      {
        data: [
          { index: 0, embedding: [1, 0] },
          { index: 1, embedding: [0, 1, 0] },
        ],
      },
      "vector 1 has 3 dimensions",
    ],
    [
      "broken base64",
      {
        data: [
          { index: 0, embedding: "AAA" },
          { index: 1, embedding: "AAA" },
        ],
      },
      "not valid base64",
    ],
    ["no data", { object: "list" }, "data"],
  ])("reports %s as a malformed response", async (_label, body, detail) => {
    answerWith(body);
    const failure = await embedder({ maxRetries: 0 })
      .embed(["a", "b"])
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "llm.malformed_response" });
    expect((failure as Error).message).toContain(detail);
  });

  it("retries a malformed batch and then succeeds", async () => {
    answerWith({ data: [] });
    const vectors = await embedder().embed(["retry me"]);
    expectVector(vectors[0], deterministicEmbedding("retry me", 64));
    expect(llm.embeddingRequests()).toHaveLength(2);
  });

  it("retries a rate limit after the Retry-After it asked for", async () => {
    llm.enqueueEmbeddings({ type: "error", status: 429, headers: { "retry-after": "2" } });
    await embedder().embed(["patient"]);
    expect(sleeps).toEqual([2000]);
    expect(llm.embeddingRequests()).toHaveLength(2);
  });

  it("surfaces a wrong key as llm.auth naming the embedding model, not the key", async () => {
    const failure = await embedder({ apiKey: "sk-wrong-embed-key" })
      .embed(["x"])
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelError);
    expect(failure).toMatchObject({ code: "llm.auth" });
    expect((failure as Error).message).toContain('embedding model "scripted-embedding"');
    expect((failure as Error).message).not.toContain("sk-wrong-embed-key");
    expect(llm.embeddingRequests()).toHaveLength(1);
  });

  it("times out a hanging request and stops promptly when the caller aborts", async () => {
    llm.enqueueEmbeddings({ type: "hang" });
    await expect(embedder({ timeoutMs: 200, maxRetries: 0 }).embed(["slow"])).rejects.toMatchObject({
      code: "llm.timeout",
    });

    llm.enqueueEmbeddings({ type: "hang" });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = performance.now();
    await expect(embedder().embed(["slow"], { signal: controller.signal })).rejects.toMatchObject({
      code: "llm.aborted",
    });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("rejects an invalid batch size with llm.config_invalid", () => {
    expect(() => embedder({ batchSize: 0 })).toThrow(expect.objectContaining({ code: "llm.config_invalid" }));
  });
});
