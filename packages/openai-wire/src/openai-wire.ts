import { type ContentBlock, createMessage, type Message, type MessageMark, UserError } from "@almanac/core";
import { z } from "zod";

/** A text part of an OpenAI content array. */
export interface OpenAITextPart {
  type: "text";
  text: string;
}

/** An image part of an OpenAI content array. */
export interface OpenAIImagePart {
  type: "image_url";
  image_url: { url: string; detail?: "auto" | "low" | "high" };
}

/** A tool call as chat completions carries it. */
export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** One message in OpenAI chat-completions wire format (the subset every compatible server accepts). */
export type OpenAIChatMessage =
  | { role: "system"; content: string | OpenAITextPart[]; name?: string }
  | { role: "user"; content: string | Array<OpenAITextPart | OpenAIImagePart>; name?: string }
  | {
      role: "assistant";
      content: string | OpenAITextPart[] | null;
      name?: string;
      tool_calls?: OpenAIToolCall[];
      /** Non-standard field used by DeepSeek, Qwen and vLLM reasoning parsers. */
      reasoning_content?: string;
    }
  | { role: "tool"; content: string; tool_call_id: string };

/** Options of {@link toOpenAIMessages}. */
export interface ToOpenAIOptions {
  /**
   * Send reasoning blocks back as `reasoning_content`. Off by default: several providers
   * reject their own reasoning text when it is sent back as input.
   */
  readonly includeReasoning?: boolean;
}

/**
 * What a request carries in place of a user or system message with no content, or an assistant message with
 * neither text nor tool calls (stored before such messages were refused at the door): strict servers refuse
 * an empty message, and one refused message in the history would fail every later request of the conversation.
 */
export const emptyMessagePlaceholder = Object.freeze({
  user: "(empty message)",
  system: "(empty system message)",
  assistant: "(empty reply)",
});

function textOnly(blocks: readonly ContentBlock[]): string[] {
  const texts: string[] = [];
  for (const block of blocks) if (block.type === "text") texts.push(block.text);
  return texts;
}

function isBlank(texts: readonly string[]): boolean {
  return texts.every((text) => text.trim() === "");
}

function textContent(texts: readonly string[]): string | OpenAITextPart[] {
  // One block travels as a plain string (what every server accepts); several keep their boundaries.
  if (texts.length === 1) return texts[0] ?? "";
  return texts.map((text) => ({ type: "text", text }));
}

function nameField(message: Message): { name?: string } {
  return message.name === undefined ? {} : { name: message.name };
}

/** Converts one Almanac message to wire messages (a tool message with several results becomes several). */
export function toOpenAIMessage(message: Message, options: ToOpenAIOptions = {}): OpenAIChatMessage[] {
  switch (message.role) {
    case "system": {
      const texts = textOnly(message.content);
      const content = isBlank(texts) ? emptyMessagePlaceholder.system : textContent(texts);
      return [{ role: "system", content, ...nameField(message) }];
    }
    case "user": {
      const hasImage = message.content.some((block) => block.type === "image");
      if (!hasImage) {
        const texts = textOnly(message.content);
        const content = isBlank(texts) ? emptyMessagePlaceholder.user : textContent(texts);
        return [{ role: "user", content, ...nameField(message) }];
      }
      const parts: Array<OpenAITextPart | OpenAIImagePart> = [];
      for (const block of message.content) {
        if (block.type === "text") parts.push({ type: "text", text: block.text });
        if (block.type === "image") {
          parts.push({
            type: "image_url",
            image_url:
              block.detail === undefined ? { url: block.url } : { url: block.url, detail: block.detail },
          });
        }
      }
      return [{ role: "user", content: parts, ...nameField(message) }];
    }
    case "assistant": {
      const texts = textOnly(message.content);
      const toolCalls: OpenAIToolCall[] = [];
      const reasoning: string[] = [];
      for (const block of message.content) {
        if (block.type === "tool_call") {
          toolCalls.push({
            id: block.id,
            type: "function",
            function: { name: block.name, arguments: block.arguments },
          });
        }
        if (block.type === "reasoning") reasoning.push(block.text);
      }
      const blank = isBlank(texts);
      return [
        {
          role: "assistant",
          content: !blank
            ? textContent(texts)
            : toolCalls.length > 0
              ? null
              : emptyMessagePlaceholder.assistant,
          ...nameField(message),
          ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }),
          ...(options.includeReasoning && reasoning.length > 0
            ? { reasoning_content: reasoning.join("\n") }
            : {}),
        },
      ];
    }
    case "tool":
      return message.content.flatMap((block) =>
        block.type === "tool_result"
          ? [{ role: "tool" as const, content: block.content, tool_call_id: block.callId }]
          : [],
      );
  }
}

/** Converts a conversation to wire format, in order. */
export function toOpenAIMessages(
  messages: readonly Message[],
  options: ToOpenAIOptions = {},
): OpenAIChatMessage[] {
  return messages.flatMap((message) => toOpenAIMessage(message, options));
}

/** Each message's wire messages as JSON, joined by commas, per message object, with and without reasoning. */
const encoded = [new WeakMap<Message, string>(), new WeakMap<Message, string>()];

/**
 * {@link toOpenAIMessages} as the JSON text of the array, equal to `JSON.stringify(toOpenAIMessages(...))`: what
 * every model request sends. Each frozen message is converted and encoded once: converting and serialising the
 * whole history for every request was 4.5 % of the server main thread over 300 sequential turns (~600
 * messages), and grows with the history up to the context window.
 */
export function toOpenAIMessagesJson(messages: readonly Message[], options: ToOpenAIOptions = {}): string {
  const cache = encoded[options.includeReasoning ? 1 : 0]!;
  const parts: string[] = [];
  for (const message of messages) {
    let json = cache.get(message);
    if (json === undefined) {
      json = toOpenAIMessage(message, options)
        .map((one) => JSON.stringify(one))
        .join(",");
      if (Object.isFrozen(message)) cache.set(message, json);
    }
    if (json !== "") parts.push(json);
  }
  return `[${parts.join(",")}]`;
}

const wireTextPart = z.object({ type: z.literal("text"), text: z.string() });
const wireImagePart = z.object({
  type: z.literal("image_url"),
  image_url: z.object({ url: z.string().min(1), detail: z.enum(["auto", "low", "high"]).optional() }),
});
const wireToolCall = z.object({
  id: z.string().min(1),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});
const wireContent = z.union([z.string(), z.array(z.union([wireTextPart, wireImagePart]))]);

/** Schema of an incoming wire message (from an API client or a provider). Unknown fields are ignored. */
export const openAIChatMessageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("system"), content: wireContent, name: z.string().optional() }),
  z.object({ role: z.literal("developer"), content: wireContent, name: z.string().optional() }),
  z.object({ role: z.literal("user"), content: wireContent, name: z.string().optional() }),
  z.object({
    role: z.literal("assistant"),
    content: wireContent.nullish(),
    name: z.string().optional(),
    tool_calls: z.array(wireToolCall).nullish(),
    reasoning_content: z.string().nullish(),
    reasoning: z.string().nullish(),
  }),
  z.object({ role: z.literal("tool"), content: wireContent, tool_call_id: z.string().min(1) }),
]);

function blocksFromContent(content: z.infer<typeof wireContent> | null | undefined): ContentBlock[] {
  if (content === null || content === undefined) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return content.map((part): ContentBlock => {
    if (part.type === "text") return { type: "text", text: part.text };
    return part.image_url.detail === undefined
      ? { type: "image", url: part.image_url.url }
      : { type: "image", url: part.image_url.url, detail: part.image_url.detail };
  });
}

/** Extra fields for a message parsed from the wire (the wire carries no id, time or marks). */
export interface FromOpenAIOptions {
  readonly id?: string;
  readonly timestamp?: number;
  readonly marks?: readonly MessageMark[];
}

/**
 * Parses one untrusted wire message into an Almanac message.
 * `developer` maps to `system`. Throws a `UserError` (`message.invalid`) naming what is wrong.
 */
export function fromOpenAIMessage(input: unknown, options: FromOpenAIOptions = {}): Message {
  const parsed = openAIChatMessageSchema.safeParse(input);
  if (!parsed.success) {
    throw new UserError("message.invalid", `Not a valid chat message: ${z.prettifyError(parsed.error)}`, {
      cause: parsed.error,
    });
  }
  const wire = parsed.data;
  const base = {
    ...(options.id === undefined ? {} : { id: options.id }),
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp }),
    ...(options.marks === undefined ? {} : { marks: options.marks }),
  };
  switch (wire.role) {
    case "system":
    case "developer":
    case "user":
      return createMessage({
        ...base,
        role: wire.role === "user" ? "user" : "system",
        ...(wire.name === undefined ? {} : { name: wire.name }),
        content: blocksFromContent(wire.content),
      });
    case "assistant": {
      const blocks: ContentBlock[] = [];
      const reasoning = wire.reasoning_content ?? wire.reasoning;
      if (reasoning) blocks.push({ type: "reasoning", text: reasoning });
      blocks.push(...blocksFromContent(wire.content));
      for (const call of wire.tool_calls ?? []) {
        blocks.push({
          type: "tool_call",
          id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        });
      }
      return createMessage({
        ...base,
        role: "assistant",
        ...(wire.name === undefined ? {} : { name: wire.name }),
        content: blocks,
      });
    }
    case "tool": {
      const text =
        typeof wire.content === "string"
          ? wire.content
          : wire.content.map((part) => (part.type === "text" ? part.text : "")).join("");
      return createMessage({
        ...base,
        role: "tool",
        content: [{ type: "tool_result", callId: wire.tool_call_id, content: text }],
      });
    }
  }
}
