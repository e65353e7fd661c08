import type { ChatResponse, ChatStreamEvent, Usage } from "@almanac/core";
import { z } from "zod";
import { createModelError, type ErrorContext } from "./classify-error.js";
import {
  createToolCallId,
  describeIssues,
  parseAssistantMessage,
  toFinishReason,
  toUsage,
} from "./convert-response.js";

const toolCallDeltaSchema = z.object({
  // Bounded: the index sizes an array, and no model asks for hundreds of calls at once.
  index: z.number().int().nonnegative().max(255).nullish(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});
const chunkSchema = z.object({
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        index: z.number().int().nullish(),
        delta: z
          .object({
            content: z.string().nullish(),
            reasoning_content: z.string().nullish(),
            reasoning: z.string().nullish(),
            tool_calls: z.array(toolCallDeltaSchema).nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: z.unknown().optional(),
});

type ToolCallDelta = z.infer<typeof toolCallDeltaSchema>;

interface PartialToolCall {
  id: string | undefined;
  name: string;
  arguments: string;
  started: boolean;
}

/** Folds streamed chunks into events and, at the end, one complete response. */
export interface StreamAssembler {
  /** Validates one untrusted chunk and returns the events it produces (may be none). */
  push(chunk: unknown): ChatStreamEvent[];
  /** The assembled response; throws `llm.malformed_response` when no choice data arrived. */
  finish(attempts: number): ChatResponse;
}

/**
 * Creates an assembler for one attempt. Only choice 0 is read (we never ask for `n > 1`);
 * tool-call fragments are joined by `index` the way OpenAI streams them.
 */
export function createStreamAssembler(context: ErrorContext): StreamAssembler {
  let text = "";
  let reasoning = "";
  let sawChoice = false;
  let finishReason: string | undefined;
  let model: string | undefined;
  let usage: Usage | undefined;
  // Sparse when a server skips an index; holes are dropped at the end.
  const toolCalls: Array<PartialToolCall | undefined> = [];

  /** Which call a fragment belongs to; servers that omit `index` get one by id, else the last call. */
  function indexOf(delta: ToolCallDelta): number {
    if (delta.index !== null && delta.index !== undefined) return delta.index;
    const isNewCall = Boolean(delta.id) && !toolCalls.some((call) => call?.id === delta.id);
    return isNewCall || toolCalls.length === 0 ? toolCalls.length : toolCalls.length - 1;
  }

  function toolCallDeltaEvents(delta: ToolCallDelta): ChatStreamEvent[] {
    const index = indexOf(delta);
    const call = toolCalls[index] ?? { id: undefined, name: "", arguments: "", started: false };
    toolCalls[index] = call;
    if (!call.started && delta.id) call.id = delta.id;
    // The name comes whole in the first fragment; later repeats (some servers send them) are ignored.
    if (!call.started && delta.function?.name) call.name = delta.function.name;
    if (delta.function?.arguments) call.arguments += delta.function.arguments;
    if (call.started || call.name === "") return [];
    call.started = true;
    call.id ??= createToolCallId();
    return [{ type: "tool-call-start", id: call.id, name: call.name }];
  }

  return {
    push(chunk) {
      const parsed = chunkSchema.safeParse(chunk);
      if (!parsed.success) {
        throw createModelError("malformed_response", context, {
          cause: parsed.error,
          detail: `invalid stream chunk: ${describeIssues(parsed.error)}`,
        });
      }
      if (parsed.data.model) model = parsed.data.model;
      const chunkUsage = toUsage(parsed.data.usage);
      if (chunkUsage !== undefined) usage = chunkUsage;

      const events: ChatStreamEvent[] = [];
      for (const choice of parsed.data.choices ?? []) {
        if ((choice.index ?? 0) !== 0) continue;
        sawChoice = true;
        if (choice.finish_reason) finishReason = choice.finish_reason;
        const delta = choice.delta;
        if (!delta) continue;
        const reasoningText = delta.reasoning_content ?? delta.reasoning;
        if (reasoningText) {
          reasoning += reasoningText;
          events.push({ type: "reasoning-delta", text: reasoningText });
        }
        if (delta.content) {
          text += delta.content;
          events.push({ type: "text-delta", text: delta.content });
        }
        for (const toolCallDelta of delta.tool_calls ?? [])
          events.push(...toolCallDeltaEvents(toolCallDelta));
      }
      return events;
    },

    finish(attempts) {
      if (!sawChoice) {
        throw createModelError("malformed_response", context, {
          detail: "stream ended without any choice data",
        });
      }
      const calls = toolCalls.filter((call): call is PartialToolCall => call !== undefined);
      const wire = {
        role: "assistant",
        content: text === "" ? null : text,
        ...(reasoning === "" ? {} : { reasoning_content: reasoning }),
        ...(calls.length === 0
          ? {}
          : {
              tool_calls: calls.map((call) => ({
                id: call.id ?? createToolCallId(),
                type: "function",
                function: { name: call.name, arguments: call.arguments },
              })),
            }),
      };
      return {
        message: parseAssistantMessage(wire, context),
        finishReason: toFinishReason(finishReason),
        usage,
        model: model ?? context.model,
        attempts,
      };
    },
  };
}
