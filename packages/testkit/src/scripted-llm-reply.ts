import { randomBytes } from "node:crypto";
import type { TokenCounter } from "@almanac/core";
import type { StepUsage, TextStep, ToolCallsStep } from "./script.js";

/** A tool call with its id and JSON arguments settled. */
export interface ResolvedToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** Token usage in wire form. */
export interface WireUsage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
}

/** Everything needed to write one reply, streamed or not. */
export interface ResolvedReply {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly content: string | null;
  readonly reasoning: string | undefined;
  readonly toolCalls: readonly ResolvedToolCall[];
  readonly finishReason: "stop" | "tool_calls";
  readonly usage: WireUsage;
}

/** A random id with an OpenAI-like prefix (`chatcmpl-…`, `call_…`). */
export function createWireId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString("hex")}`;
}

function usageOf(promptTokens: number, completionTokens: number, override: StepUsage | undefined): WireUsage {
  const prompt = override?.prompt_tokens ?? promptTokens;
  const completion = override?.completion_tokens ?? completionTokens;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** Settles ids, arguments and usage of a text or tool-call step for one request. */
export function resolveReply(
  step: TextStep | ToolCallsStep,
  context: { readonly model: string; readonly promptTokens: number; readonly counter: TokenCounter },
): ResolvedReply {
  const { counter } = context;
  const toolCalls: ResolvedToolCall[] =
    step.type === "tool_calls"
      ? step.calls.map((call) => ({
          id: call.id ?? createWireId("call_"),
          name: call.name,
          arguments: typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
        }))
      : [];
  const content =
    step.text === undefined || (step.type === "tool_calls" && step.text === "") ? null : step.text;
  const reasoning = step.type === "text" ? step.reasoning : undefined;
  let completionTokens = counter.countText(content ?? "") + counter.countText(reasoning ?? "");
  for (const call of toolCalls)
    completionTokens += counter.countText(call.name) + counter.countText(call.arguments);
  return {
    id: createWireId("chatcmpl-"),
    created: Math.floor(Date.now() / 1000),
    model: context.model,
    content,
    reasoning,
    toolCalls,
    finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
    usage: usageOf(context.promptTokens, completionTokens, step.usage),
  };
}

/** The non-streamed `chat.completion` body of a reply. */
export function completionBody(reply: ResolvedReply): unknown {
  return {
    id: reply.id,
    object: "chat.completion",
    created: reply.created,
    model: reply.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: reply.content,
          refusal: null,
          ...(reply.reasoning === undefined ? {} : { reasoning_content: reply.reasoning }),
          ...(reply.toolCalls.length === 0
            ? {}
            : {
                tool_calls: reply.toolCalls.map((call) => ({
                  id: call.id,
                  type: "function",
                  function: { name: call.name, arguments: call.arguments },
                })),
              }),
        },
        finish_reason: reply.finishReason,
        logprobs: null,
      },
    ],
    usage: reply.usage,
  };
}

/** A `chat.completion` body with no choices (for the `empty_choices` step). */
export function emptyChoicesBody(model: string, usage: WireUsage): unknown {
  return {
    id: createWireId("chatcmpl-"),
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [],
    usage,
  };
}
