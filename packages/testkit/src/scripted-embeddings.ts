import { createHash } from "node:crypto";
import type { TokenCounter } from "@almanac/core";
import { z } from "zod";

// Each CJK character is its own word, so Chinese texts sharing characters land close together.
const WORD = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[\p{L}\p{N}]+/gu;

/** The words a text is embedded from: lower-cased letters/digits runs, each CJK character alone. */
export function embeddingWords(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/**
 * A deterministic unit vector for a text: every word adds ±1 at two hashed positions.
 * The same text always gives the same vector; texts sharing words have a higher cosine.
 */
export function deterministicEmbedding(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  const words = embeddingWords(text);
  // A text without words still needs a unit vector; hash the raw text instead.
  for (const word of words.length === 0 ? [`\u0000${text}`] : words) {
    const digest = createHash("sha256").update(word).digest();
    for (let slot = 0; slot < 2; slot += 1) {
      const position = digest.readUInt32LE(slot * 8) % dimensions;
      const sign = (digest[slot * 8 + 4] ?? 0) & 1 ? 1 : -1;
      vector[position] = (vector[position] ?? 0) + sign;
    }
  }
  let norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0));
  if (norm === 0) {
    // Every word cancelled out; fall back to a fixed axis so the vector stays a unit vector.
    vector[0] = 1;
    norm = 1;
  }
  return vector.map((value) => value / norm);
}

/** Little-endian float32 bytes of a vector, base64-encoded (OpenAI's `encoding_format: "base64"`). */
export function encodeFloat32Base64(vector: readonly number[]): string {
  const buffer = Buffer.alloc(vector.length * 4);
  for (const [index, value] of vector.entries()) buffer.writeFloatLE(value, index * 4);
  return buffer.toString("base64");
}

/** The embeddings request fields the scripted server understands. */
const embeddingBodySchema = z
  .object({
    model: z.string().min(1),
    input: z.union([z.string(), z.array(z.string()).min(1)]),
    dimensions: z.number().int().positive().max(65_536).nullish(),
    encoding_format: z.enum(["float", "base64"]).nullish(),
  })
  .loose();

/** Result of building an embeddings response. */
export type EmbeddingOutcome =
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly message: string };

/** Validates an embeddings body and builds the `list` response with deterministic vectors. */
export function buildEmbeddingResponse(
  body: unknown,
  options: { readonly defaultDimensions: number; readonly counter: TokenCounter },
): EmbeddingOutcome {
  const parsed = embeddingBodySchema.safeParse(body);
  if (!parsed.success) {
    return { ok: false, message: `Invalid embeddings body: ${z.prettifyError(parsed.error)}` };
  }
  const inputs = typeof parsed.data.input === "string" ? [parsed.data.input] : parsed.data.input;
  const dimensions = parsed.data.dimensions ?? options.defaultDimensions;
  const base64 = parsed.data.encoding_format === "base64";
  let promptTokens = 0;
  const data = inputs.map((input, index) => {
    promptTokens += options.counter.countText(input);
    const vector = deterministicEmbedding(input, dimensions);
    return { object: "embedding", index, embedding: base64 ? encodeFloat32Base64(vector) : vector };
  });
  return {
    ok: true,
    body: {
      object: "list",
      data,
      model: parsed.data.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    },
  };
}
