import OpenAI from "openai";
import { afterEach, assert, beforeEach, describe, expect, it } from "vitest";
import { script } from "./script.js";
import { deterministicEmbedding, embeddingWords, encodeFloat32Base64 } from "./scripted-embeddings.js";
import { type ScriptedLlm, startScriptedLlm } from "./scripted-llm.js";

let llm: ScriptedLlm;
let client: OpenAI;

beforeEach(async () => {
  llm = await startScriptedLlm();
  client = new OpenAI({ baseURL: llm.baseURL, apiKey: "k", maxRetries: 0 });
});
afterEach(async () => {
  await llm.close();
});

const cosine = (a: readonly number[], b: readonly number[]): number =>
  a.reduce((sum, value, index) => sum + value * (b[index] ?? 0), 0);
const norm = (vector: readonly number[]): number => Math.sqrt(cosine(vector, vector));

async function embed(
  input: string | string[],
  extra: Partial<OpenAI.EmbeddingCreateParams> = {},
): Promise<number[][]> {
  const response = await client.embeddings.create({ model: "embed-test", input, ...extra });
  return response.data.map((item) => item.embedding);
}

describe("embeddings endpoint", () => {
  it("returns one deterministic unit vector per input, in order, with the default dimension", async () => {
    const first = await embed(["deploy the server", "buy milk"]);
    const second = await embed(["buy milk", "deploy the server"]);
    expect(first).toHaveLength(2);
    for (const vector of first) {
      expect(vector).toHaveLength(64);
      expect(norm(vector)).toBeCloseTo(1, 5);
    }
    expect(second[0]).toEqual(first[1]);
    expect(second[1]).toEqual(first[0]);
    expect(first[0]).not.toEqual(first[1]);
  });

  it("honours dimensions and the embeddingDimensions option", async () => {
    expect((await embed("hello", { dimensions: 16 }))[0]).toHaveLength(16);
    const wide = await startScriptedLlm({ embeddingDimensions: 256 });
    try {
      const wideClient = new OpenAI({ baseURL: wide.baseURL, apiKey: "k", maxRetries: 0 });
      const response = await wideClient.embeddings.create({ model: "e", input: "hello" });
      expect(response.data[0]?.embedding).toHaveLength(256);
    } finally {
      await wide.close();
    }
  });

  it("sends base64 when the client asks for it (the openai default) and floats when asked, with the same values", async () => {
    const viaBase64 = await embed("quarterly finance report");
    const viaFloat = await embed("quarterly finance report", { encoding_format: "float" });
    expect(llm.embeddingRequests()).toMatchObject([
      { encoding_format: "base64" },
      { encoding_format: "float" },
    ]);
    const expected = deterministicEmbedding("quarterly finance report", 64);
    expect(viaFloat[0]).toEqual(expected);
    // base64 carries float32, so values match to float32 precision.
    for (const [index, value] of (viaBase64[0] ?? []).entries())
      expect(value).toBeCloseTo(expected[index] ?? Number.NaN, 6);
  });

  it("puts texts sharing words closer than unrelated texts", async () => {
    const [anchor, similar, unrelated] = await embed([
      "the release moved to monday",
      "release moved to friday",
      "grocery list apples bananas",
    ]);
    expect(cosine(anchor!, similar!)).toBeGreaterThan(cosine(anchor!, unrelated!) + 0.2);
  });

  it("puts Chinese texts sharing characters closer than unrelated ones", () => {
    const anchor = deterministicEmbedding("发布改到周一", 64);
    expect(cosine(anchor, deterministicEmbedding("发布改到周五", 64))).toBeGreaterThan(
      cosine(anchor, deterministicEmbedding("买牛奶和面包", 64)),
    );
  });

  it("counts prompt tokens in usage", async () => {
    const response = await client.embeddings.create({ model: "embed-test", input: ["one two", "three"] });
    expect(response.usage.prompt_tokens).toBeGreaterThanOrEqual(3);
    expect(response.usage.total_tokens).toBe(response.usage.prompt_tokens);
    expect(response.model).toBe("embed-test");
  });

  it("rejects an input that is not a string or string array with 400", async () => {
    const error = await client.embeddings
      .create({ model: "embed-test", input: [1, 2, 3] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: "invalid_request_body" });
  });
});

describe("scripted embedding failures", () => {
  it("plays queued failures first and then returns vectors again", async () => {
    llm.enqueueEmbeddings(script.error(429, { retryAfter: 3 }), script.malformed());
    const rateLimited = await embed("x").catch((caught: unknown) => caught);
    assert(rateLimited instanceof OpenAI.RateLimitError);
    expect(rateLimited.headers?.get("retry-after")).toBe("3");
    await expect(embed("x")).rejects.toThrow();
    expect(await embed("x")).toHaveLength(1);
    expect(llm.embeddingRequests()).toHaveLength(3);
  });

  it("hangs until the client times out", async () => {
    llm.enqueueEmbeddings(script.hang());
    const error = await client.embeddings
      .create({ model: "e", input: "x" }, { timeout: 100 })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
  });
});

describe("deterministic vectors", () => {
  it("splits words on letters and digits and each CJK character alone", () => {
    expect(embeddingWords("Hello, OPS-4821 world!")).toEqual(["hello", "ops", "4821", "world"]);
    expect(embeddingWords("记住 OPS")).toEqual(["记", "住", "ops"]);
  });

  it("gives a unit vector even for text without words", () => {
    expect(norm(deterministicEmbedding("", 8))).toBeCloseTo(1, 6);
    expect(norm(deterministicEmbedding("!!!", 8))).toBeCloseTo(1, 6);
  });

  it("encodes little-endian float32", () => {
    const bytes = Buffer.from(encodeFloat32Base64([1, -0.5]), "base64");
    expect(bytes).toHaveLength(8);
    expect(bytes.readFloatLE(0)).toBe(1);
    expect(bytes.readFloatLE(4)).toBe(-0.5);
  });
});
