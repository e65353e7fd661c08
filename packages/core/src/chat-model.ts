import type { Message } from "./message.js";

/** A tool as the model sees it: name, description and a JSON Schema for its arguments. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** Whether and which tool the model must call. */
export type ToolChoice = "auto" | "none" | "required" | { readonly name: string };

/** One chat-completion request in Almanac's own terms. */
export interface ChatRequest {
  readonly messages: readonly Message[];
  readonly tools?: readonly ToolSpec[];
  readonly toolChoice?: ToolChoice;
  readonly temperature?: number;
  readonly maxOutputTokens?: number;
  /** Cancels the request (and any retry wait). */
  readonly signal?: AbortSignal;
  /** Overrides the model's per-request timeout for this call. */
  readonly timeoutMs?: number;
}

/** Token usage reported by the provider for one call. */
export interface Usage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** Prompt tokens served from the provider's prompt cache, when reported. */
  readonly cachedPromptTokens?: number;
  /** Reasoning tokens inside completionTokens, when reported. */
  readonly reasoningTokens?: number;
}

/** Why the model stopped. Unknown provider values map to `other`. */
export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter" | "other";

/** The result of one completed call. */
export interface ChatResponse {
  /** The assistant message (text, reasoning and tool-call blocks). */
  readonly message: Message;
  readonly finishReason: FinishReason;
  /** Absent when the provider reported none. */
  readonly usage: Usage | undefined;
  /** The model name the provider says answered. */
  readonly model: string;
  /** How many HTTP attempts the call took (1 = no retry). */
  readonly attempts: number;
}

/** Events of a streamed completion; the last one is always `finish` (or the iterator throws). */
export type ChatStreamEvent =
  | { readonly type: "text-delta"; readonly text: string }
  | { readonly type: "reasoning-delta"; readonly text: string }
  | { readonly type: "tool-call-start"; readonly id: string; readonly name: string }
  | { readonly type: "retry"; readonly attempt: number; readonly delayMs: number; readonly reason: string }
  | { readonly type: "finish"; readonly response: ChatResponse };

/** A chat model. Implementations classify failures as `ProviderError`s and retry what is retryable. */
export interface ChatModel {
  /** The configured model name (what is sent as `model`). */
  readonly modelName: string;
  /** Context window in tokens, when known from configuration. */
  readonly contextWindow: number | undefined;
  complete(request: ChatRequest): Promise<ChatResponse>;
  stream(request: ChatRequest): AsyncIterable<ChatStreamEvent>;
}

/** Options of one embedding call. */
export interface EmbedOptions {
  readonly signal?: AbortSignal;
}

/** Turns texts into vectors, in input order. */
export interface Embedder {
  readonly modelName: string;
  /** Vector size: configured, or learnt from the first response; undefined before that. */
  readonly dimensions: number | undefined;
  embed(texts: readonly string[], options?: EmbedOptions): Promise<number[][]>;
}
