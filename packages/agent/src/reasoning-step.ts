import {
  type ChatModel,
  type ChatRequest,
  type ChatResponse,
  type Logger,
  type Message,
  messageText,
  type ToolSpec,
} from "@almanac/core";
import type { EmitAgentEvent } from "./agent-events.js";
import { AgentError } from "./errors.js";

/** Input of {@link runReasoningStep}: one model call of a run. */
export interface ReasoningStepInput {
  readonly model: ChatModel;
  readonly messages: readonly Message[];
  readonly tools: readonly ToolSpec[];
  /** Output cap of this call; the model's own default when undefined. */
  readonly maxOutputTokens: number | undefined;
  readonly iteration: number;
  readonly stream: boolean;
  readonly signal: AbortSignal | undefined;
  readonly emit: EmitAgentEvent;
  readonly logger: Logger;
}

/** Throws `AgentError` (`agent.aborted`) when the signal has fired. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted)
    throw new AgentError("agent.aborted", "The run was cancelled.", { cause: signal.reason });
}

async function streamResponse(input: ReasoningStepInput, request: ChatRequest): Promise<ChatResponse> {
  for await (const event of input.model.stream(request)) {
    switch (event.type) {
      case "text-delta":
        input.emit({ type: "text-delta", iteration: input.iteration, text: event.text });
        break;
      case "retry":
        input.logger.warn(
          { attempt: event.attempt, delayMs: event.delayMs, reason: event.reason },
          "model call retried",
        );
        break;
      case "finish":
        return event.response;
      default:
        break;
    }
  }
  throw new AgentError(
    "agent.stream_incomplete",
    `The stream of model ${input.model.modelName} ended without a finish event.`,
  );
}

/**
 * Calls the model once (streamed or not) and returns its response. Model errors propagate unchanged,
 * except that any failure after the run's signal fired becomes `agent.aborted` (cause kept).
 */
export async function runReasoningStep(input: ReasoningStepInput): Promise<ChatResponse> {
  const request: ChatRequest = {
    messages: input.messages,
    ...(input.tools.length === 0 ? {} : { tools: input.tools }),
    ...(input.maxOutputTokens === undefined ? {} : { maxOutputTokens: input.maxOutputTokens }),
    ...(input.signal === undefined ? {} : { signal: input.signal }),
  };
  input.emit({ type: "reasoning-start", iteration: input.iteration });
  let response: ChatResponse;
  try {
    if (input.stream) {
      response = await streamResponse(input, request);
    } else {
      response = await input.model.complete(request);
      const text = messageText(response.message);
      if (text !== "") input.emit({ type: "text-delta", iteration: input.iteration, text });
    }
  } catch (error) {
    if (input.signal?.aborted) {
      throw new AgentError("agent.aborted", "The run was cancelled during a model call.", { cause: error });
    }
    throw error;
  }
  // A model that ignored the signal still answered; a cancelled run does not act on that answer.
  throwIfAborted(input.signal);
  return response;
}
