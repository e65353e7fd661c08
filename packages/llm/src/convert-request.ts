import type { ChatRequest, ToolChoice, ToolSpec } from "@almanac/core";
import { toOpenAIMessagesJson } from "@almanac/openai-wire";
import type {
  ChatCompletionFunctionTool,
  ChatCompletionToolChoiceOption,
} from "openai/resources/chat/completions";

/**
 * How the output cap is sent: `max_tokens` (most OpenAI-compatible servers), `max_completion_tokens`
 * (OpenAI's newer models refuse `max_tokens`), or `off` (not sent; the server's own limit applies).
 */
export type OutputCapParameter = "max_tokens" | "max_completion_tokens" | "off";

/** The values of {@link OutputCapParameter}, for config schemas. */
export const OUTPUT_CAP_PARAMETERS = ["max_tokens", "max_completion_tokens", "off"] as const;

/** Options of {@link toChatCompletionJson}. */
export interface ConvertRequestOptions {
  readonly model: string;
  /** Send reasoning blocks back as `reasoning_content` (see `toOpenAIMessages` in `@almanac/openai-wire`). */
  readonly includeReasoning?: boolean;
  /** Field that carries `maxOutputTokens`. Default `max_tokens`. */
  readonly outputCapParameter?: OutputCapParameter;
  /** Cap used when the request sets none, so every request carries one. Default: none. */
  readonly defaultMaxOutputTokens?: number;
}

function outputCap(request: ChatRequest, options: ConvertRequestOptions): Record<string, number> {
  const parameter = options.outputCapParameter ?? "max_tokens";
  const cap = request.maxOutputTokens ?? options.defaultMaxOutputTokens;
  if (cap === undefined || parameter === "off") return {};
  return parameter === "max_tokens" ? { max_tokens: cap } : { max_completion_tokens: cap };
}

/** Each frozen tool spec's wire JSON (tool specs are built once per agent and frozen). */
const toolJson = new WeakMap<ToolSpec, string>();

/** A body that is JSON text already: with this header the `openai` client sends it as it is. */
export const jsonContentType = { "content-type": "application/json" } as const;

/**
 * An Almanac chat request as the JSON text of a chat-completions body (plus `extra` fields, e.g. `stream`), sent
 * with {@link jsonContentType}: the history's and the tools' JSON is made once per message and tool (core's
 * `toOpenAIMessagesJson`), not for every request.
 */
export function toChatCompletionJson(
  request: ChatRequest,
  options: ConvertRequestOptions,
  extra: Readonly<Record<string, unknown>> = {},
): string {
  const messages = toOpenAIMessagesJson(request.messages, {
    includeReasoning: options.includeReasoning ?? false,
  });
  const tools = request.tools ?? [];
  const toolsJson = tools.map((tool) => {
    let json = toolJson.get(tool);
    if (json === undefined) {
      json = JSON.stringify(toFunctionTool(tool));
      if (Object.isFrozen(tool)) toolJson.set(tool, json);
    }
    return json;
  });
  const rest = JSON.stringify({
    model: options.model,
    // A tool choice without tools is rejected by OpenAI; drop it rather than fail the call.
    ...(request.toolChoice === undefined || tools.length === 0
      ? {}
      : { tool_choice: toToolChoice(request.toolChoice) }),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...outputCap(request, options),
    ...extra,
  });
  const toolsField = tools.length === 0 ? "" : `,"tools":[${toolsJson.join(",")}]`;
  return `{"messages":${messages}${toolsField},${rest.slice(1)}`;
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
