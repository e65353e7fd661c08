/** Options every scripted step accepts. */
export interface StepTiming {
  /** Wait this long before answering (milliseconds). */
  readonly delayMs?: number;
}

/** Usage numbers that override the server's own counts for one reply. */
export interface StepUsage {
  readonly prompt_tokens?: number;
  readonly completion_tokens?: number;
}

/** Options of the steps that produce a completion. */
export interface ReplyOptions extends StepTiming {
  readonly usage?: StepUsage;
  /** When streaming, wait this long between chunks (milliseconds), so a client can act mid-stream. */
  readonly chunkDelayMs?: number;
}

/** An assistant text reply; `reasoning` goes out as `reasoning_content`. */
export interface TextStep extends ReplyOptions {
  readonly type: "text";
  readonly text: string;
  readonly reasoning?: string;
}

/** One tool call a scripted reply asks for. An object `arguments` is sent as its JSON text. */
export interface ScriptedToolCall {
  readonly id?: string;
  readonly name: string;
  readonly arguments: string | Readonly<Record<string, unknown>>;
}

/** An assistant reply asking for tool calls, optionally with text. */
export interface ToolCallsStep extends ReplyOptions {
  readonly type: "tool_calls";
  readonly calls: readonly ScriptedToolCall[];
  readonly text?: string;
}

/** An HTTP error. Without `body`, an OpenAI-shaped error body is built from the status. */
export interface ErrorStep extends ReplyOptions {
  readonly type: "error";
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Never answers, until the client aborts or the server closes. */
export interface HangStep extends ReplyOptions {
  readonly type: "hang";
}

/** HTTP 200 whose body is not valid JSON (when streaming: a broken SSE data line). */
export interface MalformedStep extends ReplyOptions {
  readonly type: "malformed";
}

/** HTTP 200 with `choices: []`. */
export interface EmptyChoicesStep extends ReplyOptions {
  readonly type: "empty_choices";
}

/** What the scripted server does with one accepted chat-completions request. */
export type ScriptStep = TextStep | ToolCallsStep | ErrorStep | HangStep | MalformedStep | EmptyChoicesStep;

/** What the scripted server does with one embeddings request (when none is queued: real vectors). */
export type EmbeddingStep = ErrorStep | HangStep | MalformedStep;

/** Options of {@link script.error}. */
export interface ErrorStepOptions extends StepTiming {
  /** Seconds, sent as the `retry-after` header. */
  readonly retryAfter?: number;
  /** Milliseconds, sent as the `retry-after-ms` header (which the openai client also honours). */
  readonly retryAfterMs?: number;
  /** `error.code` of the default body, e.g. `insufficient_quota`; default depends on the status. */
  readonly code?: string;
  /** `error.message` of the default body. */
  readonly message?: string;
  /** `error.type` of the default body; default depends on the status. */
  readonly errorType?: string;
  /** A whole body instead of the default one. */
  readonly body?: unknown;
  /** Extra response headers. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The `type` and `code` OpenAI uses for an HTTP status, for default error bodies. */
export function defaultErrorKind(status: number): { readonly type: string; readonly code: string } {
  if (status === 401) return { type: "invalid_request_error", code: "invalid_api_key" };
  if (status === 403) return { type: "invalid_request_error", code: "permission_denied" };
  if (status === 404) return { type: "invalid_request_error", code: "model_not_found" };
  if (status === 429) return { type: "rate_limit_error", code: "rate_limit_exceeded" };
  if (status >= 500) return { type: "server_error", code: "server_error" };
  return { type: "invalid_request_error", code: "invalid_request" };
}

/** An OpenAI-shaped error body: `{error: {message, type, param: null, code}}`. */
export function openAIErrorBody(message: string, type: string, code: string | null): unknown {
  return { error: { message, type, param: null, code } };
}

function buildError(status: number, options: ErrorStepOptions = {}): ErrorStep {
  const kind = defaultErrorKind(status);
  const headers: Record<string, string> = { ...options.headers };
  if (options.retryAfter !== undefined) headers["retry-after"] = String(options.retryAfter);
  if (options.retryAfterMs !== undefined) headers["retry-after-ms"] = String(options.retryAfterMs);
  const body =
    options.body ??
    openAIErrorBody(
      options.message ?? `scripted error ${status}`,
      options.errorType ?? kind.type,
      options.code ?? kind.code,
    );
  return {
    type: "error",
    status,
    body,
    headers,
    ...(options.delayMs === undefined ? {} : { delayMs: options.delayMs }),
  };
}

/** Builders for script steps, so tests read as a script: `llm.enqueue(script.text("hi"))`. */
export const script = {
  /** An assistant text reply. */
  text(text: string, options: ReplyOptions & { readonly reasoning?: string } = {}): TextStep {
    return { ...options, type: "text", text };
  },
  /** An assistant reply asking for the given tool calls (ids generated when absent). */
  toolCalls(
    calls: readonly ScriptedToolCall[],
    options: ReplyOptions & { readonly text?: string } = {},
  ): ToolCallsStep {
    return { ...options, type: "tool_calls", calls };
  },
  /** An HTTP error; `script.error(429, {retryAfter: 1})` is a rate limit asking to wait one second. */
  error: buildError,
  /** A request that never gets an answer. */
  hang(options: StepTiming = {}): HangStep {
    return { ...options, type: "hang" };
  },
  /** A 200 reply that is not valid JSON. */
  malformed(options: StepTiming = {}): MalformedStep {
    return { ...options, type: "malformed" };
  },
  /** A 200 reply with no choices. */
  emptyChoices(options: ReplyOptions = {}): EmptyChoicesStep {
    return { ...options, type: "empty_choices" };
  },
} as const;
