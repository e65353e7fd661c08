import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson, sleep } from "./http-io.js";
import { defaultErrorKind, type ErrorStep, openAIErrorBody, type StepTiming } from "./script.js";

/** One `POST /v1/audio/transcriptions` the scripted server received (multipart form data, as OpenAI takes it). */
export interface RecordedTranscription {
  readonly model: string;
  readonly fileName: string;
  /** The uploaded part's MIME type. */
  readonly contentType: string;
  readonly bytes: Uint8Array;
  readonly language?: string;
  readonly responseFormat?: string;
  /** Milliseconds since the Unix epoch. */
  readonly receivedAt: number;
}

/** What the scripted server answers one transcription request with: the text, or an HTTP error. */
export type TranscriptionStep =
  | ({ readonly type: "transcript"; readonly text: string } & StepTiming)
  | ErrorStep;

/** What a transcription request gets when nothing is queued: a text naming what was heard, so tests can check it. */
export function defaultTranscript(request: RecordedTranscription): string {
  return `transcript of ${request.fileName} (${request.bytes.length} bytes)`;
}

async function readBytes(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}

/**
 * Parses a transcription request the way OpenAI does (multipart form data with `file` and `model`); undefined, with
 * a 400 already sent, when it is not one.
 */
export async function readTranscriptionRequest(
  request: IncomingMessage,
  response: ServerResponse,
): Promise<RecordedTranscription | undefined> {
  const receivedAt = Date.now();
  const body = await readBytes(request);
  const refuse = (message: string) => {
    sendJson(response, 400, openAIErrorBody(message, "invalid_request_error", "invalid_request_body"));
    return undefined;
  };
  let form: FormData;
  try {
    form = await new Response(new Uint8Array(body), {
      headers: { "content-type": request.headers["content-type"] ?? "" },
    }).formData();
  } catch {
    return refuse("Expected multipart/form-data with a 'file' and a 'model'.");
  }
  const file = form.get("file");
  const model = form.get("model");
  if (!(file instanceof Blob) || typeof model !== "string" || model === "")
    return refuse("Expected multipart/form-data with a 'file' and a 'model'.");
  const language = form.get("language");
  const responseFormat = form.get("response_format");
  return Object.freeze({
    model,
    fileName: file instanceof File ? file.name : "file",
    contentType: file.type,
    bytes: new Uint8Array(await file.arrayBuffer()),
    ...(typeof language === "string" ? { language } : {}),
    ...(typeof responseFormat === "string" ? { responseFormat } : {}),
    receivedAt,
  });
}

/** Answers one transcription request with a step (`{text}` as OpenAI's `json` format, or the error). */
export async function writeTranscriptionStep(
  step: TranscriptionStep,
  response: ServerResponse,
  signal: AbortSignal,
): Promise<void> {
  await sleep(step.delayMs ?? 0, signal);
  if (step.type === "transcript") {
    sendJson(response, 200, { text: step.text });
    return;
  }
  const kind = defaultErrorKind(step.status);
  sendJson(
    response,
    step.status,
    step.body ?? openAIErrorBody(`scripted error ${step.status}`, kind.type, kind.code),
    step.headers ?? {},
  );
}
