import { type ChatRequest, type ToolChoice, type ToolSpec, toOpenAIMessages } from "@almanac/core";
import type {
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionFunctionTool,
  ChatCompletionToolChoiceOption,
} from "openai/resources/chat/completions";

/** Options of {@link toChatCompletionBody}. */
export interface ConvertRequestOptions {
  readonly model: string;
  /** Send reasoning blocks back as `reasoning_content` (see core's `toOpenAIMessages`). */
  readonly includeReasoning?: boolean;
}

/** Converts an Almanac chat request to a chat-completions body (non-streaming; callers add `stream`). */
export function toChatCompletionBody(
  request: ChatRequest,
  options: ConvertRequestOptions,
): ChatCompletionCreateParamsNonStreaming {
  const tools = request.tools ?? [];
  return {
    model: options.model,
    messages: toOpenAIMessages(request.messages, { includeReasoning: options.includeReasoning ?? false }),
    ...(tools.length === 0 ? {} : { tools: tools.map(toFunctionTool) }),
    // A tool choice without tools is rejected by OpenAI; drop it rather than fail the call.
    ...(request.toolChoice === undefined || tools.length === 0
      ? {}
      : { tool_choice: toToolChoice(request.toolChoice) }),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.maxOutputTokens === undefined ? {} : { max_tokens: request.maxOutputTokens }),
  };
}

function toFunctionTool(tool: ToolSpec): ChatCompletionFunctionTool {
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } },
  };
}

function toToolChoice(choice: ToolChoice): ChatCompletionToolChoiceOption {
  if (typeof choice === "string") return choice;
  return { type: "function", function: { name: choice.name } };
}
