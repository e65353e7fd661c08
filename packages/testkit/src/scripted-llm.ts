import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createTokenCounter } from "@almanac/tokenizer";
import { parseJsonBody, readBody, responseAbortSignal, sendJson } from "./http-io.js";
import { type EmbeddingStep, openAIErrorBody, type ScriptStep } from "./script.js";
import { buildEmbeddingResponse } from "./scripted-embeddings.js";
import { type RecordedChatRequest, type RecordedRequest, recordChatRequest } from "./scripted-llm-records.js";
import { writeChatStep } from "./scripted-llm-responder.js";
import {
  defaultTranscript,
  type RecordedTranscription,
  readTranscriptionRequest,
  type TranscriptionStep,
  writeTranscriptionStep,
} from "./scripted-llm-transcriptions.js";
import { validateChatRequest } from "./scripted-llm-validation.js";

/** Options of {@link startScriptedLlm}. */
export interface ScriptedLlmOptions {
  /**
   * Context window in tokens; prompt (messages + tool specs, counted as core counts them) plus the
   * requested completion above it → 400 `context_length_exceeded`. Default {@link DEFAULT_CONTEXT_WINDOW};
   * `false` turns the check off (a test that means to send oversized requests says so).
   */
  readonly contextWindow?: number | false;
  /** Refuse requests whose tool calls and tool results do not pair up (400 `invalid_tool_pairing`). Default true. */
  readonly checkToolPairing?: boolean;
  /** Model ids listed by `GET /v1/models`; default `["scripted-model"]`. */
  readonly models?: readonly string[];
  /** Vector size when a request gives no `dimensions`; default 64. */
  readonly embeddingDimensions?: number;
  /** When set, requests need `Authorization: Bearer <apiKey>` or get 401 `invalid_api_key`. */
  readonly apiKey?: string;
}

/** Decides the step for a chat request when the queue is empty. */
export type ScriptFallback = (request: RecordedChatRequest) => ScriptStep | Promise<ScriptStep>;

/** A running scripted OpenAI-compatible server. */
export interface ScriptedLlm {
  /** `http://127.0.0.1:<port>/v1`, for the openai client's `baseURL`. */
  readonly baseURL: string;
  /** Appends steps to the FIFO queue; each accepted chat request consumes one. */
  enqueue(...steps: ScriptStep[]): void;
  /** Sets the responder used when the queue is empty (default: HTTP 500 "script exhausted"). */
  setFallback(fallback: ScriptFallback): void;
  /** Appends embeddings failures; when the queue is empty, embeddings get deterministic vectors. */
  enqueueEmbeddings(...steps: EmbeddingStep[]): void;
  /** Every HTTP request received, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Parsed bodies of `/v1/chat/completions` requests, rejected ones included. */
  chatRequests(): RecordedChatRequest[];
  /** Bodies of `/v1/embeddings` requests. */
  embeddingRequests(): unknown[];
  /** The chat requests refused before consuming a step (validation or API key). */
  rejections(): RecordedChatRequest[];
  /**
   * Appends answers to `POST /v1/audio/transcriptions`; when none is queued a request gets
   * `transcript of <file name> (<n> bytes)`.
   */
  enqueueTranscriptions(...steps: TranscriptionStep[]): void;
  /** The transcription requests received (the uploaded bytes included), in order. */
  transcriptionRequests(): RecordedTranscription[];
  /** Number of scripted chat steps not consumed yet. */
  pending(): number;
  /** Clears both queues, the fallback and all records. */
  reset(): void;
  /** Stops the server, cutting any open (hanging or delayed) request. */
  close(): Promise<void>;
}

const DEFAULT_MODELS = ["scripted-model"];

/** The scripted server's window when a test names none: the server's own default `model.contextWindow`. */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

const exhausted: ScriptFallback = () => ({
  type: "error",
  status: 500,
  body: openAIErrorBody("scripted LLM: script exhausted", "server_error", "script_exhausted"),
});

/** Starts a scripted OpenAI-compatible server on a random port of 127.0.0.1. */
export async function startScriptedLlm(options: ScriptedLlmOptions = {}): Promise<ScriptedLlm> {
  const counter = createTokenCounter();
  const models = options.models ?? DEFAULT_MODELS;
  const defaultDimensions = options.embeddingDimensions ?? 64;
  let queue: ScriptStep[] = [];
  let embeddingQueue: EmbeddingStep[] = [];
  let fallback: ScriptFallback = exhausted;
  const requests: RecordedRequest[] = [];
  let chatRecords: RecordedChatRequest[] = [];
  let embeddingRecords: unknown[] = [];
  let transcriptionQueue: TranscriptionStep[] = [];
  let transcriptionRecords: RecordedTranscription[] = [];
  const inFlight = new Set<AbortController>();

  const authorized = (request: IncomingMessage): boolean =>
    options.apiKey === undefined || request.headers.authorization === `Bearer ${options.apiKey}`;

  const sendUnauthorized = (response: ServerResponse): void => {
    sendJson(
      response,
      401,
      openAIErrorBody("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    );
  };

  async function handleChat(
    body: unknown,
    request: IncomingMessage,
    response: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    const receivedAt = Date.now();
    if (!authorized(request)) {
      chatRecords.push(
        recordChatRequest(body, receivedAt, {
          status: 401,
          code: "invalid_api_key",
          message: "Incorrect API key provided.",
        }),
      );
      sendUnauthorized(response);
      return;
    }
    const validation = validateChatRequest(body, {
      counter,
      contextWindow: options.contextWindow ?? DEFAULT_CONTEXT_WINDOW,
      checkToolPairing: options.checkToolPairing ?? true,
    });
    if (!validation.ok) {
      const { rejection } = validation;
      chatRecords.push(recordChatRequest(body, receivedAt, rejection));
      sendJson(
        response,
        rejection.status,
        openAIErrorBody(rejection.message, "invalid_request_error", rejection.code),
      );
      return;
    }
    const record = recordChatRequest(body, receivedAt, undefined, validation.accepted.promptTokens);
    chatRecords.push(record);
    const step = queue.shift() ?? (await fallback(record));
    await writeChatStep(step, { accepted: validation.accepted, counter, response, signal });
  }

  async function handleEmbeddings(
    body: unknown,
    request: IncomingMessage,
    response: ServerResponse,
    signal: AbortSignal,
  ): Promise<void> {
    embeddingRecords.push(body);
    if (!authorized(request)) {
      sendUnauthorized(response);
      return;
    }
    const step = embeddingQueue.shift();
    if (step !== undefined) {
      await writeChatStep(step, { counter, response, signal });
      return;
    }
    const outcome = buildEmbeddingResponse(body, { defaultDimensions, counter });
    if (outcome.ok) sendJson(response, 200, outcome.body);
    else
      sendJson(
        response,
        400,
        openAIErrorBody(outcome.message, "invalid_request_error", "invalid_request_body"),
      );
  }

  function handleModels(request: IncomingMessage, response: ServerResponse, path: string): void {
    if (!authorized(request)) {
      sendUnauthorized(response);
      return;
    }
    const entry = (id: string) => ({ id, object: "model", created: 0, owned_by: "almanac-testkit" });
    if (path === "/v1/models") {
      sendJson(response, 200, { object: "list", data: models.map(entry) });
      return;
    }
    const id = decodeURIComponent(path.slice("/v1/models/".length));
    if (models.includes(id)) sendJson(response, 200, entry(id));
    else
      sendJson(
        response,
        404,
        openAIErrorBody(`The model '${id}' does not exist`, "invalid_request_error", "model_not_found"),
      );
  }

  async function handleTranscription(
    request: IncomingMessage,
    response: ServerResponse,
    path: string,
    signal: AbortSignal,
  ): Promise<void> {
    const transcription = await readTranscriptionRequest(request, response);
    requests.push(
      Object.freeze({
        method: "POST",
        path,
        headers: { ...request.headers },
        body: transcription === undefined ? "" : { model: transcription.model, file: transcription.fileName },
        receivedAt: Date.now(),
      }),
    );
    if (transcription === undefined) return;
    if (!authorized(request)) {
      sendUnauthorized(response);
      return;
    }
    transcriptionRecords.push(transcription);
    const step = transcriptionQueue.shift() ?? { type: "transcript", text: defaultTranscript(transcription) };
    await writeTranscriptionStep(step, response, signal);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const controller = responseAbortSignal(response);
    inFlight.add(controller);
    response.on("close", () => inFlight.delete(controller));
    const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    // A multipart upload, read as bytes (every other route takes JSON text).
    if (request.method === "POST" && path === "/v1/audio/transcriptions") {
      await handleTranscription(request, response, path, controller.signal);
      return;
    }
    const text = await readBody(request);
    const { value: body } = parseJsonBody(text);
    requests.push(
      Object.freeze({
        method: request.method ?? "GET",
        path,
        headers: { ...request.headers },
        body,
        receivedAt: Date.now(),
      }),
    );
    const method = request.method ?? "GET";
    if (method === "POST" && path === "/v1/chat/completions") {
      await handleChat(body, request, response, controller.signal);
    } else if (method === "POST" && path === "/v1/embeddings") {
      await handleEmbeddings(body, request, response, controller.signal);
    } else if (method === "GET" && (path === "/v1/models" || path.startsWith("/v1/models/"))) {
      handleModels(request, response, path);
    } else {
      sendJson(
        response,
        404,
        openAIErrorBody(`Unknown request URL: ${method} ${path}.`, "invalid_request_error", "unknown_url"),
      );
    }
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      // A bug in a test's fallback or in the kit: answer 500 so the test sees it, never crash the runner.
      const message = error instanceof Error ? error.message : String(error);
      sendJson(
        response,
        500,
        openAIErrorBody(`scripted LLM failed: ${message}`, "server_error", "testkit_error"),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  let closing: Promise<void> | undefined;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    enqueue: (...steps) => {
      queue.push(...steps);
    },
    setFallback: (next) => {
      fallback = next;
    },
    enqueueEmbeddings: (...steps) => {
      embeddingQueue.push(...steps);
    },
    get requests() {
      return requests;
    },
    chatRequests: () => [...chatRecords],
    embeddingRequests: () => [...embeddingRecords],
    rejections: () => chatRecords.filter((record) => record.rejected !== undefined),
    enqueueTranscriptions: (...steps) => {
      transcriptionQueue.push(...steps);
    },
    transcriptionRequests: () => [...transcriptionRecords],
    pending: () => queue.length,
    reset: () => {
      queue = [];
      embeddingQueue = [];
      fallback = exhausted;
      requests.length = 0;
      chatRecords = [];
      embeddingRecords = [];
      transcriptionQueue = [];
      transcriptionRecords = [];
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        for (const controller of inFlight) controller.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
