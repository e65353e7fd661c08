import { randomUUID } from "node:crypto";
import type { ChatResponse, FinishReason, Usage } from "@almanac/core";
import { fromOpenAIMessage } from "@almanac/openai-wire";
import { z } from "zod";
import { createModelError, type ErrorContext } from "./classify-error.js";

const usageSchema = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative().nullish(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().int().nonnegative().nullish() }).nullish(),
  completion_tokens_details: z
    .object({ reasoning_tokens: z.number().int().nonnegative().nullish() })
    .nullish(),
});

/**
 * Reads a provider's `usage` object. Usage is bookkeeping, not the answer: a missing or odd one
 * gives `undefined` instead of failing the call.
 */
export function toUsage(raw: unknown): Usage | undefined {
  const parsed = usageSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const wire = parsed.data;
  const cached = wire.prompt_tokens_details?.cached_tokens;
  const reasoning = wire.completion_tokens_details?.reasoning_tokens;
  return {
    promptTokens: wire.prompt_tokens,
    completionTokens: wire.completion_tokens,
    totalTokens: wire.total_tokens ?? wire.prompt_tokens + wire.completion_tokens,
    ...(cached === null || cached === undefined ? {} : { cachedPromptTokens: cached }),
    ...(reasoning === null || reasoning === undefined ? {} : { reasoningTokens: reasoning }),
  };
}

/** Maps a wire `finish_reason` to ours; unknown or missing values become `other`. */
export function toFinishReason(raw: string | null | undefined): FinishReason {
  switch (raw) {
    case "stop":
    case "length":
    case "content_filter":
    case "tool_calls":
      return raw;
    case "function_call":
      return "tool_calls";
    default:
      return "other";
  }
}

const toolCallSchema = z.looseObject({ id: z.string().nullish() });
const assistantMessageSchema = z.looseObject({
  role: z.literal("assistant").optional(),
  tool_calls: z.array(toolCallSchema).nullish(),
});
const completionSchema = z.object({
  model: z.string().nullish(),
  choices: z.array(z.object({ message: assistantMessageSchema, finish_reason: z.string().nullish() })).min(1),
  usage: z.unknown().optional(),
});

/** A tool-call id for servers that leave it out (some local ones do). */
export function createToolCallId(): string {
  return `call_${randomUUID().replaceAll("-", "")}`;
}

/**
 * Validates an untrusted chat-completion body and converts it; anything unreadable throws
 * `llm.malformed_response`. `attempts` is filled in by the caller that counted them.
 */
export function parseChatCompletion(body: unknown, context: ErrorContext, attempts: number): ChatResponse {
  if (typeof body !== "object" || body === null) {
    const preview = typeof body === "string" ? `: ${JSON.stringify(body.slice(0, 80))}` : "";
    throw createModelError("malformed_response", context, { detail: `body is not a JSON object${preview}` });
  }
  if (!("choices" in body) || !Array.isArray(body.choices) || body.choices.length === 0) {
    throw createModelError("malformed_response", context, { detail: "response has no choices" });
  }
  const parsed = completionSchema.safeParse(body);
  if (!parsed.success) {
    throw createModelError("malformed_response", context, {
      cause: parsed.error,
      detail: describeIssues(parsed.error),
    });
  }
  const choice = parsed.data.choices[0];
  if (choice === undefined) {
    throw createModelError("malformed_response", context, { detail: "response has no choices" });
  }
  const { tool_calls: toolCalls, ...rest } = choice.message;
  const wire = {
    ...rest,
    role: "assistant",
    ...(toolCalls
      ? { tool_calls: toolCalls.map((call) => ({ ...call, id: call.id || createToolCallId() })) }
      : {}),
  };
  return {
    message: parseAssistantMessage(wire, context),
    finishReason: toFinishReason(choice.finish_reason),
    usage: toUsage(parsed.data.usage),
    model: parsed.data.model || context.model,
    attempts,
  };
}

/** One line naming each invalid field, e.g. `choices.0.message: Invalid input`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".") || "(body)"}: ${issue.message}`).join("; ");
}

/** Converts an assistant wire message with core's parser, reporting a bad one as a malformed response. */
export function parseAssistantMessage(wire: unknown, context: ErrorContext): ChatResponse["message"] {
  try {
    return fromOpenAIMessage(wire);
  } catch (error) {
    throw createModelError("malformed_response", context, {
      cause: error,
      detail: error instanceof Error ? error.message : String(error),
    });
  }
}
