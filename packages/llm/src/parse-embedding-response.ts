import { z } from "zod";
import { createModelError, type ErrorContext } from "./classify-error.js";
import { describeIssues } from "./convert-response.js";

const embeddingResponseSchema = z.object({
  data: z.array(
    z.object({
      index: z.number().int().nonnegative(),
      // base64 (little-endian float32) when asked for; some servers answer floats regardless.
      embedding: z.union([z.array(z.number()), z.string()]),
    }),
  ),
});

/** What one embeddings response must match. */
export interface EmbeddingExpectations {
  readonly expectedCount: number;
  /** Configured or learnt vector size; undefined before the first response. */
  readonly expectedDimensions: number | undefined;
  readonly context: ErrorContext;
}

/**
 * Validates an untrusted `/embeddings` body and returns the vectors in input order: one per input,
 * every index 0..n-1 exactly once, all of one finite size (the expected one when known).
 * Anything else throws `llm.malformed_response`; a size mismatch is not retried (it will not change).
 */
export function parseEmbeddingResponse(body: unknown, expectations: EmbeddingExpectations): number[][] {
  const { expectedCount, expectedDimensions, context } = expectations;
  const malformed = (detail: string, retryable = true) =>
    createModelError("malformed_response", context, { detail, ...(retryable ? {} : { retryable: false }) });

  const parsed = embeddingResponseSchema.safeParse(body);
  if (!parsed.success) {
    throw createModelError("malformed_response", context, {
      cause: parsed.error,
      detail:
        typeof body === "object" && body !== null
          ? describeIssues(parsed.error)
          : "body is not a JSON object",
    });
  }
  const items = parsed.data.data;
  if (items.length !== expectedCount) {
    throw malformed(`expected ${expectedCount} vectors, got ${items.length}`);
  }
  const vectors: Array<number[] | undefined> = new Array(expectedCount).fill(undefined);
  for (const item of items) {
    if (item.index >= expectedCount || vectors[item.index] !== undefined) {
      throw malformed(`vector indexes must be 0..${expectedCount - 1} each once, got index ${item.index}`);
    }
    const vector = typeof item.embedding === "string" ? decodeFloat32Base64(item.embedding) : item.embedding;
    if (vector === undefined) throw malformed(`vector ${item.index} is not valid base64 float32 data`);
    vectors[item.index] = vector;
  }

  const result = vectors.filter((vector): vector is number[] => vector !== undefined);
  const size = expectedDimensions ?? result[0]?.length ?? 0;
  for (const [index, vector] of result.entries()) {
    if (vector.length === 0) throw malformed(`vector ${index} is empty`);
    if (vector.length !== size) {
      const expected = expectedDimensions === undefined ? `the ${size} of vector 0` : `the expected ${size}`;
      throw malformed(`vector ${index} has ${vector.length} dimensions, not ${expected}`, false);
    }
    if (!vector.every(Number.isFinite)) throw malformed(`vector ${index} holds a non-finite number`);
  }
  return result;
}

/** Decodes OpenAI's base64 embedding (little-endian float32); undefined when it is not that. */
function decodeFloat32Base64(text: string): number[] | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, "base64");
  if (bytes.byteLength % 4 !== 0) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector: number[] = [];
  for (let offset = 0; offset < bytes.byteLength; offset += 4) vector.push(view.getFloat32(offset, true));
  return vector;
}
