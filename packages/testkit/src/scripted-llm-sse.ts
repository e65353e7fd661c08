import type { ResolvedReply, WireUsage } from "./scripted-llm-reply.js";

/** Splits text into small deltas (one word with its trailing space each), as providers stream it. */
export function splitIntoDeltas(text: string): string[] {
  return text.match(/\s*\S+\s*|\s+/gu) ?? [];
}

/** Splits a tool call's JSON arguments into short fragments (at least three when long enough), as OpenAI streams them. */
export function splitArguments(json: string): string[] {
  if (json === "") return [];
  const fragmentLength = Math.max(1, Math.min(16, Math.ceil(json.length / 3)));
  const fragments: string[] = [];
  for (let start = 0; start < json.length; start += fragmentLength) {
    fragments.push(json.slice(start, start + fragmentLength));
  }
  return fragments;
}

interface ChunkOptions {
  readonly includeUsage: boolean;
}

/**
 * The `chat.completion.chunk` objects of a streamed reply, in order: role, reasoning deltas,
 * text deltas, tool calls (first delta with index/id/type/name, then argument fragments),
 * the finish chunk, and a usage chunk with `choices: []` when usage was asked for.
 */
export function replyChunks(reply: ResolvedReply, options: ChunkOptions): unknown[] {
  const base = { id: reply.id, object: "chat.completion.chunk", created: reply.created, model: reply.model };
  const usageField = options.includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): unknown => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...usageField,
  });
  const chunks: unknown[] = [chunk({ role: "assistant", content: "", refusal: null })];
  for (const piece of splitIntoDeltas(reply.reasoning ?? ""))
    chunks.push(chunk({ reasoning_content: piece }));
  for (const piece of splitIntoDeltas(reply.content ?? "")) chunks.push(chunk({ content: piece }));
  for (const [index, call] of reply.toolCalls.entries()) {
    chunks.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
    );
    for (const fragment of splitArguments(call.arguments)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }));
    }
  }
  chunks.push(chunk({}, reply.finishReason));
  if (options.includeUsage) chunks.push({ ...base, choices: [], usage: reply.usage });
  return chunks;
}

/** The chunks of an `empty_choices` step when streaming: one chunk without choices. */
export function emptyChoicesChunks(
  reply: { id: string; created: number; model: string },
  usage: WireUsage,
): unknown[] {
  return [
    {
      id: reply.id,
      object: "chat.completion.chunk",
      created: reply.created,
      model: reply.model,
      choices: [],
      usage,
    },
  ];
}

/** One SSE event line for a JSON payload. */
export function sseData(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`;
}

/** The SSE terminator OpenAI sends. */
export const SSE_DONE = "data: [DONE]\n\n";

/** A data line that is not valid JSON, for the `malformed` step. */
export const SSE_BROKEN =
  'data: {"id":"chatcmpl-broken","object":"chat.completion.chunk","choices":[{"delta":\n\n';
