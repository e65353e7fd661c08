import { type AlmanacError, type Embedder, type EmbedOptions, linkAbortSignals } from "@almanac/core";
import { classifyError, type ErrorContext } from "./classify-error.js";
import { parseEmbeddingResponse } from "./parse-embedding-response.js";
import { type EndpointConfig, integerAtLeast, resolveEndpoint } from "./resolve-endpoint.js";
import { withRetry } from "./retry.js";

/** Configuration of {@link createOpenAIEmbedder}. */
export interface OpenAIEmbedderConfig extends EndpointConfig {
  /** Vector size: sent as `dimensions` and required of every response. Learnt from the first response when absent. */
  readonly dimensions?: number;
  /** Inputs per request (default 64). */
  readonly batchSize?: number;
  /**
   * Wire encoding asked for (default `base64`, about a third of the bytes of `float`).
   * Either way a response in the other encoding is accepted, since some servers ignore the field.
   */
  readonly encodingFormat?: "base64" | "float";
}

/**
 * Creates an {@link Embedder} on an OpenAI-compatible `/embeddings` endpoint: batches inputs,
 * retries like the chat model, and validates every response (count, order, vector sizes).
 */
export function createOpenAIEmbedder(config: OpenAIEmbedderConfig): Embedder {
  const what = "embedder";
  const endpoint = resolveEndpoint(config, what);
  const batchSize = integerAtLeast(config.batchSize, 64, 1, "batchSize", what);
  const configuredDimensions =
    config.dimensions === undefined ? undefined : integerAtLeast(config.dimensions, 0, 1, "dimensions", what);
  const encodingFormat = config.encodingFormat ?? "base64";
  const logger = endpoint.logger.child({ component: "embedder", model: endpoint.model });
  let learntDimensions: number | undefined;

  const errorContext = (signal: AbortSignal | undefined, timedOut = false): ErrorContext => ({
    operation: "embeddings",
    model: endpoint.model,
    baseURL: endpoint.baseURL,
    apiKey: endpoint.apiKey,
    timeoutMs: endpoint.timeoutMs,
    callerSignal: signal,
    timedOut,
  });

  async function embedBatch(texts: readonly string[], signal: AbortSignal | undefined): Promise<number[][]> {
    const { value } = await withRetry(
      async () => {
        const attemptSignal = linkAbortSignals([signal], endpoint.timeoutMs);
        try {
          const raw: unknown = await (await endpoint.client()).embeddings.create(
            {
              model: endpoint.model,
              input: [...texts],
              encoding_format: encodingFormat,
              ...(configuredDimensions === undefined ? {} : { dimensions: configuredDimensions }),
            },
            { signal: attemptSignal.signal, timeout: endpoint.timeoutMs },
          );
          return parseEmbeddingResponse(raw, {
            expectedCount: texts.length,
            expectedDimensions: configuredDimensions ?? learntDimensions,
            context: errorContext(signal),
          });
        } catch (error) {
          throw classifyError(error, errorContext(signal, attemptSignal.timedOut()));
        } finally {
          attemptSignal.dispose();
        }
      },
      {
        policy: endpoint.policy,
        sleep: endpoint.sleep,
        signal,
        classify: (error) => classifyError(error, errorContext(signal)),
        onRetry: (info) =>
          logger.warn(
            {
              kind: info.error.kind,
              status: info.error.status,
              attempt: info.attempt,
              delayMs: info.delayMs,
              error: info.error.message,
            },
            "embedding call failed; retrying",
          ),
      },
    );
    return value;
  }

  return {
    modelName: endpoint.model,
    get dimensions() {
      return configuredDimensions ?? learntDimensions;
    },

    async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<number[][]> {
      const vectors: number[][] = [];
      try {
        for (let start = 0; start < texts.length; start += batchSize) {
          const batch = await embedBatch(texts.slice(start, start + batchSize), options.signal);
          learntDimensions ??= batch[0]?.length;
          vectors.push(...batch);
        }
      } catch (error) {
        const failure: AlmanacError = classifyError(error, errorContext(options.signal));
        logger.warn({ code: failure.code, error: failure.message }, "embedding call failed");
        throw failure;
      }
      return vectors;
    },
  };
}
