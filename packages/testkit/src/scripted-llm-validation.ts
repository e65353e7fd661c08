import { isAlmanacError, type Message, type TokenCounter, toolCallsOf, toolResultsOf } from "@almanac/core";
import { fromOpenAIMessage } from "@almanac/openai-wire";
import { countWireToolTokens } from "@almanac/tokenizer";
import { z } from "zod";

/** Why the strict validator (or the API-key check) refused a request. */
export interface ChatRejection {
  readonly status: number;
  readonly code: string;
  readonly message: string;
}

const toolSchema = z
  .object({
    type: z.literal("function"),
    function: z
      .object({
        name: z.string().min(1),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional(),
      })
      .loose(),
  })
  .loose();

const tokenLimit = z.number().int().nonnegative().nullish();

/** The fields of a chat-completions body the scripted server understands; other fields are kept but unchecked. */
const chatBodySchema = z
  .object({
    model: z.string().min(1),
    messages: z.array(z.unknown()).min(1),
    tools: z.array(toolSchema).nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).loose().nullish(),
    max_tokens: tokenLimit,
    max_completion_tokens: tokenLimit,
  })
  .loose();

const rawToolsSchema = z.object({ tools: z.array(z.unknown()).nullish() }).loose();

/** A chat body that passed the shape check. */
export type ChatBody = z.infer<typeof chatBodySchema>;

/** A request that passed every check, with what the server needs to answer it. */
export interface AcceptedChat {
  readonly body: ChatBody;
  readonly messages: readonly Message[];
  /** Prompt tokens: messages plus the tools JSON, as counted by the tokenizer's counter. */
  readonly promptTokens: number;
}

/** Outcome of {@link validateChatRequest}. */
export type ChatValidation =
  | { readonly ok: true; readonly accepted: AcceptedChat }
  | { readonly ok: false; readonly rejection: ChatRejection };

function malformed(message: string): ChatValidation {
  return { ok: false, rejection: { status: 400, code: "invalid_request_body", message } };
}

/**
 * Finds tool-call pairing errors the way strict providers do: every tool call of an assistant
 * message must be answered by the tool messages right after it, and every tool message must
 * answer a call of the assistant message before its run. Returns the message of the first error.
 */
export function findToolPairingError(messages: readonly Message[]): string | undefined {
  let open: Set<string> | undefined; // ids of the current assistant message's calls, while in its tool run
  let openIndex = -1;
  const unanswered = (): string | undefined => {
    if (open === undefined || open.size === 0) return undefined;
    return (
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each ` +
      `'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(", ")} ` +
      `(assistant message at index ${openIndex}).`
    );
  };
  for (const [index, message] of messages.entries()) {
    if (message.role === "tool") {
      for (const result of toolResultsOf(message)) {
        if (open === undefined || !open.delete(result.callId)) {
          return (
            `Invalid parameter: messages with role 'tool' must be a response to a preceding message with ` +
            `'tool_calls'. The tool message at index ${index} answers tool_call_id ${result.callId}, ` +
            `which no preceding assistant message asked for.`
          );
        }
      }
      continue;
    }
    const error = unanswered();
    if (error !== undefined) return error;
    open = undefined;
    if (message.role === "assistant") {
      const calls = toolCallsOf(message);
      if (calls.length > 0) {
        open = new Set(calls.map((call) => call.id));
        openIndex = index;
      }
    }
  }
  return unanswered();
}

function contextMessage(window: number, prompt: number, completion: number): string {
  if (completion === 0) {
    return (
      `This model's maximum context length is ${window} tokens. However, your messages resulted in ` +
      `${prompt} tokens. Please reduce the length of the messages.`
    );
  }
  return (
    `This model's maximum context length is ${window} tokens. However, you requested ` +
    `${prompt + completion} tokens (${prompt} in the messages, ${completion} in the completion). ` +
    `Please reduce the length of the messages or completion.`
  );
}

/** Options of {@link validateChatRequest}. */
export interface ChatValidationOptions {
  readonly counter: TokenCounter;
  /** Prompt plus requested completion above this → `context_length_exceeded`; `false` skips the check. */
  readonly contextWindow: number | false;
  /** Check that tool calls and tool results pair up as strict providers require. */
  readonly checkToolPairing: boolean;
}

const rawMessageSchema = z
  .object({ role: z.string(), content: z.unknown().optional(), tool_calls: z.unknown().optional() })
  .loose();

function isEmptyContent(content: unknown): boolean {
  if (content === undefined || content === null) return true;
  if (typeof content === "string") return content.trim() === "";
  return Array.isArray(content) && content.length === 0;
}

/**
 * A message strict servers refuse for having no content (LM Studio and OpenAI refuse `content: []`; several
 * refuse an empty string): a user or system message without content, or an assistant message with neither
 * content nor tool calls. Returns the error message, worded as OpenAI words it.
 */
export function findEmptyContentError(wire: unknown, index: number): string | undefined {
  const parsed = rawMessageSchema.safeParse(wire);
  if (!parsed.success) return undefined; // the full schema reports the shape
  const { role, content, tool_calls: toolCalls } = parsed.data;
  if (role === "tool") return undefined;
  if (role === "assistant" && Array.isArray(toolCalls) && toolCalls.length > 0) return undefined;
  if (!isEmptyContent(content)) return undefined;
  return Array.isArray(content)
    ? `Invalid 'messages[${index}].content': empty array. Expected an array with minimum length 1, but got an empty array instead.`
    : `Invalid 'messages[${index}].content': a ${role} message must have non-empty content.`;
}

/**
 * The strict checks of the scripted server, in the order a real provider applies them:
 * body shape (including every wire message, none of them empty), context window, tool-call pairing.
 */
export function validateChatRequest(body: unknown, options: ChatValidationOptions): ChatValidation {
  const parsed = chatBodySchema.safeParse(body);
  if (!parsed.success) return malformed(`Invalid chat completions body: ${z.prettifyError(parsed.error)}`);
  const messages: Message[] = [];
  for (const [index, wire] of parsed.data.messages.entries()) {
    const empty = findEmptyContentError(wire, index);
    if (empty !== undefined) return malformed(empty);
    try {
      messages.push(fromOpenAIMessage(wire));
    } catch (error) {
      const detail = isAlmanacError(error) ? error.message : String(error);
      return malformed(`Invalid message at index ${index}: ${detail}`);
    }
  }
  // Counted on the tools exactly as sent (the parsed copy may reorder keys), by the one rule for tools.
  const sentTools = rawToolsSchema.safeParse(body).data?.tools ?? [];
  const promptTokens =
    options.counter.countMessages(messages) + countWireToolTokens(options.counter, sentTools);
  const completion = parsed.data.max_completion_tokens ?? parsed.data.max_tokens ?? 0;
  if (options.contextWindow !== false && promptTokens + completion > options.contextWindow) {
    return {
      ok: false,
      rejection: {
        status: 400,
        code: "context_length_exceeded",
        message: contextMessage(options.contextWindow, promptTokens, completion),
      },
    };
  }
  const pairing = options.checkToolPairing ? findToolPairingError(messages) : undefined;
  if (pairing !== undefined) {
    return { ok: false, rejection: { status: 400, code: "invalid_tool_pairing", message: pairing } };
  }
  return { ok: true, accepted: { body: parsed.data, messages, promptTokens } };
}
