import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type ChatStreamEvent,
  createMessage,
  InternalError,
  messageText,
} from "@almanac/core";
import { summarySections, turnPrefixSection } from "../src/summary-prompt.js";

/** A well-formed summary with every section; `note` goes under Done so tests can trace merges. */
export function validSummary(note: string, withTurnPrefix = false): string {
  const headings = withTurnPrefix ? [...summarySections, turnPrefixSection] : [...summarySections];
  return headings.map((heading) => `## ${heading}\n${heading === "Done" ? note : "None."}`).join("\n\n");
}

/** True when a summary request carries a turn prefix (its material has the current-request block). */
export function requestHasTurnPrefix(material: string): boolean {
  return material.includes("<current-request-so-far>");
}

/** How the fake summary model answers one request: a text, or a thrown error. */
export type SummaryReply = string | Error | ((request: ChatRequest) => string);

/**
 * An in-memory summary model: answers each request with the next scripted reply, or by default with a
 * valid summary that names how many requests it has seen. Records every request. A fake at the
 * `ChatModel` interface, for unit and property tests (end-to-end tests use the scripted HTTP server).
 */
export class FakeSummaryModel implements ChatModel {
  readonly requests: ChatRequest[] = [];
  readonly #replies: SummaryReply[];

  constructor(
    readonly modelName = "fake-summary-model",
    readonly contextWindow: number | undefined = undefined,
    replies: readonly SummaryReply[] = [],
  ) {
    this.#replies = [...replies];
  }

  async complete(request: ChatRequest): Promise<ChatResponse> {
    this.requests.push(request);
    const reply =
      this.#replies.shift() ?? ((current: ChatRequest) => defaultReply(current, this.requests.length));
    if (reply instanceof Error) throw reply;
    const text = typeof reply === "function" ? reply(request) : reply;
    return {
      message: createMessage({ role: "assistant", timestamp: 0, content: text }),
      finishReason: "stop",
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
      model: this.modelName,
      attempts: 1,
    };
  }

  // biome-ignore lint/correctness/useYield: summaries are never streamed; calling this is a test bug.
  async *stream(): AsyncIterable<ChatStreamEvent> {
    throw new InternalError("test.internal", "FakeSummaryModel does not stream.");
  }
}

function defaultReply(request: ChatRequest, count: number): string {
  const material = request.messages.at(-1);
  const text = material === undefined ? "" : messageText(material);
  return validSummary(`- summary #${count}`, requestHasTurnPrefix(text));
}
