import { type AlmanacError, linkAbortSignals } from "@almanac/core";
import { z } from "zod";
import { classifyError, type ErrorContext } from "./classify-error.js";
import { ModelError } from "./model-error.js";
import { type EndpointConfig, resolveEndpoint } from "./resolve-endpoint.js";
import { withRetry } from "./retry.js";

/** One recording to transcribe. */
export interface AudioInput {
  readonly bytes: Uint8Array;
  /** File name sent with the upload; servers read the format from its extension (e.g. `voice.ogg`). */
  readonly name: string;
  /** MIME type of the bytes, e.g. `audio/ogg`. */
  readonly contentType: string;
}

/** Options of one transcription. */
export interface TranscribeOptions {
  readonly signal?: AbortSignal;
  /** ISO-639-1 language hint (`en`, `zh`); absent: the server detects it. */
  readonly language?: string;
}

/** Speech to text. */
export interface Transcriber {
  readonly modelName: string;
  /** The text said in the recording (may be empty for silence). */
  transcribe(audio: AudioInput, options?: TranscribeOptions): Promise<string>;
}

/** Configuration of {@link createOpenAITranscriber}: the endpoint settings the chat model and embedder take. */
export type OpenAITranscriberConfig = EndpointConfig;

/** A transcription body: OpenAI and whisper servers answer `{text}` for the `json` format. */
const transcriptionSchema = z.object({ text: z.string() }).loose();

/**
 * The upload as multipart form data, encoded here by the platform's own `FormData` and `Response` and sent as a
 * plain body with its content type: the request takes the chat model's path (retries, error classification).
 */
async function multipartBody(
  audio: AudioInput,
  model: string,
  language: string | undefined,
): Promise<{ readonly bytes: Uint8Array; readonly contentType: string }> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(audio.bytes)], { type: audio.contentType }), audio.name);
  form.append("model", model);
  form.append("response_format", "json");
  if (language !== undefined) form.append("language", language);
  const encoded = new Response(form);
  return {
    bytes: new Uint8Array(await encoded.arrayBuffer()),
    contentType: encoded.headers.get("content-type") ?? "multipart/form-data",
  };
}

/**
 * Creates a {@link Transcriber} on an OpenAI-compatible `/audio/transcriptions` endpoint (OpenAI, Groq, a local
 * whisper server such as faster-whisper-server or whisper.cpp's), with the retries and error classification of the
 * chat model.
 */
export function createOpenAITranscriber(config: OpenAITranscriberConfig): Transcriber {
  const endpoint = resolveEndpoint(config, "transcription model");
  const logger = endpoint.logger.child({ component: "transcriber", model: endpoint.model });

  const errorContext = (signal: AbortSignal | undefined, timedOut = false): ErrorContext => ({
    operation: "transcription",
    model: endpoint.model,
    baseURL: endpoint.baseURL,
    apiKey: endpoint.apiKey,
    timeoutMs: endpoint.timeoutMs,
    callerSignal: signal,
    timedOut,
  });

  return {
    modelName: endpoint.model,
    async transcribe(audio, options = {}) {
      const { signal } = options;
      try {
        const { value } = await withRetry(
          async () => {
            const attemptSignal = linkAbortSignals([signal], endpoint.timeoutMs);
            try {
              const upload = await multipartBody(audio, endpoint.model, options.language);
              const raw: unknown = await (await endpoint.client()).post<unknown>("/audio/transcriptions", {
                body: upload.bytes,
                headers: { "content-type": upload.contentType },
                signal: attemptSignal.signal,
                timeout: endpoint.timeoutMs,
              });
              const parsed = transcriptionSchema.safeParse(raw);
              if (!parsed.success)
                throw new ModelError("malformed_response", "The transcription answer has no text field.", {
                  retryable: false,
                });
              return parsed.data.text.trim();
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
                },
                "transcription failed; retrying",
              ),
          },
        );
        return value;
      } catch (error) {
        const failure: AlmanacError = classifyError(error, errorContext(signal));
        logger.warn({ code: failure.code, error: failure.message }, "transcription failed");
        throw failure;
      }
    },
  };
}
