import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type ChatStreamEvent,
  type ContentBlock,
  createMessage,
  InternalError,
  messageText,
  type Usage,
} from "@almanac/core";

/** One tool call a scripted step asks for; `arguments` may be an object (sent as JSON) or raw text. */
export interface FakeToolCall {
  readonly id?: string;
  readonly name: string;
  readonly arguments: string | Record<string, unknown>;
}

/** What the fake model answers to one request. */
export type FakeStep =
  | { readonly kind: "text"; readonly text: string; readonly usage?: Usage }
  | { readonly kind: "tool_calls"; readonly calls: readonly FakeToolCall[]; readonly text?: string }
  | { readonly kind: "error"; readonly error: unknown }
  | { readonly kind: "respond"; readonly respond: (request: ChatRequest) => Promise<FakeStep> };

/** Builders for scripted steps. */
export const step = {
  text: (text: string, usage?: Usage): FakeStep => ({ kind: "text", text, ...(usage ? { usage } : {}) }),
  toolCalls: (calls: readonly FakeToolCall[], text?: string): FakeStep => ({
    kind: "tool_calls",
    calls,
    ...(text === undefined ? {} : { text }),
  }),
  error: (error: unknown): FakeStep => ({ kind: "error", error }),
  respond: (respond: (request: ChatRequest) => Promise<FakeStep>): FakeStep => ({ kind: "respond", respond }),
};

const defaultUsage: Usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };

/**
 * An in-memory `ChatModel` that answers from a script, one step per call, and records every request.
 * A fake at the interface: the agent cannot tell it from a real client.
 */
export class FakeChatModel implements ChatModel {
  readonly modelName = "fake-model";
  readonly contextWindow = 8192;
  readonly requests: ChatRequest[] = [];
  readonly #steps: FakeStep[];
  #nextCallId = 1;

  constructor(steps: readonly FakeStep[] = []) {
    this.#steps = [...steps];
  }

  /** Steps not consumed yet. */
  get remaining(): number {
    return this.#steps.length;
  }

  enqueue(...steps: readonly FakeStep[]): void {
    this.#steps.push(...steps);
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    // Keep a copy: the agent's memory moves on after the call.
    this.requests.push({ ...request, messages: [...request.messages] });
    const next = this.#steps.shift();
    if (next === undefined) throw new InternalError("test.internal", "The fake model has no step left.");
    return this.#answer(next, request);
  }

  async *stream(request: ChatRequest): AsyncIterable<ChatStreamEvent> {
    const response = await this.complete(request);
    const text = messageText(response.message);
    // Two chunks, so a consumer that only keeps the last delta is caught.
    const middle = Math.ceil(text.length / 2);
    for (const chunk of [text.slice(0, middle), text.slice(middle)]) {
      if (chunk !== "") yield { type: "text-delta", text: chunk };
    }
    yield { type: "finish", response };
  }

  async #answer(next: FakeStep, request: ChatRequest): Promise<ChatResponse> {
    switch (next.kind) {
      case "error":
        throw next.error;
      case "respond":
        return this.#answer(await next.respond(request), request);
      case "text":
        return this.#response([{ type: "text", text: next.text }], "stop", next.usage ?? defaultUsage);
      case "tool_calls": {
        const blocks: ContentBlock[] = next.text === undefined ? [] : [{ type: "text", text: next.text }];
        for (const call of next.calls) {
          blocks.push({
            type: "tool_call",
            id: call.id ?? `call_${this.#nextCallId++}`,
            name: call.name,
            arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
          });
        }
        return this.#response(blocks, "tool_calls", defaultUsage);
      }
    }
  }

  #response(content: ContentBlock[], finishReason: ChatResponse["finishReason"], usage: Usage): ChatResponse {
    return {
      message: createMessage({ role: "assistant", content }),
      finishReason,
      usage,
      model: this.modelName,
      attempts: 1,
    };
  }
}
