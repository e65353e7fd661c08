import type { IncomingHttpHeaders } from "node:http";
import { z } from "zod";
import type { ChatRejection } from "./scripted-llm-validation.js";

/** One HTTP request the scripted server received, whatever its path. */
export interface RecordedRequest {
  readonly method: string;
  /** Path without the query string, e.g. `/v1/chat/completions`. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it was not JSON (`""` when there was none). */
  readonly body: unknown;
  /** Milliseconds since the Unix epoch. */
  readonly receivedAt: number;
}

/** A tool call in a recorded wire message. */
export interface RecordedToolCall {
  readonly id: string;
  readonly type?: string;
  readonly function: { readonly name: string; readonly arguments: string };
}

/** A wire message of a recorded chat request (loosely typed: rejected requests may hold odd shapes). */
export interface RecordedChatMessage {
  readonly role: string;
  readonly content?: unknown;
  readonly name?: string;
  readonly tool_calls?: readonly RecordedToolCall[] | null;
  readonly tool_call_id?: string;
  readonly [field: string]: unknown;
}

/**
 * The parsed body of one `/v1/chat/completions` request, every field as sent, plus what the
 * server decided. `model`, `messages` and `stream` are always present (empty/false when the
 * body lacked them); `rejected` is set when the request was refused before consuming a step.
 */
export interface RecordedChatRequest {
  readonly model: string;
  readonly messages: readonly RecordedChatMessage[];
  readonly stream: boolean;
  readonly rejected?: ChatRejection;
  /** Prompt tokens as the server counted them (messages + tool specs), on accepted requests. */
  readonly promptTokens?: number;
  /** Milliseconds since the Unix epoch. */
  readonly receivedAt: number;
  readonly [field: string]: unknown;
}

const recordedToolCallSchema = z
  .object({
    id: z.string(),
    type: z.string().optional(),
    function: z.object({ name: z.string(), arguments: z.string() }).loose(),
  })
  .loose();

const recordedMessageSchema = z
  .object({
    role: z.string(),
    name: z.string().optional(),
    tool_calls: z.array(recordedToolCallSchema).nullish(),
    tool_call_id: z.string().optional(),
  })
  .loose();

const recordedBodySchema = z
  .object({
    model: z.string().catch(""),
    messages: z.array(recordedMessageSchema).catch([]),
    stream: z.boolean().catch(false),
  })
  .loose();

/** Builds the record of a chat request from its untrusted body. */
export function recordChatRequest(
  body: unknown,
  receivedAt: number,
  rejected: ChatRejection | undefined,
  promptTokens?: number,
): RecordedChatRequest {
  const parsed = recordedBodySchema.safeParse(body);
  const fields = parsed.success ? parsed.data : { model: "", messages: [], stream: false };
  return Object.freeze({
    ...fields,
    receivedAt,
    ...(rejected === undefined ? {} : { rejected }),
    ...(promptTokens === undefined ? {} : { promptTokens }),
  });
}

/** The text of a recorded message's content: a string as is, or the text parts of an array joined. */
export function recordedText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) =>
      typeof part === "object" && part !== null && "text" in part && typeof part.text === "string"
        ? part.text
        : "",
    )
    .join("");
}

/** The text of the newest user message of a recorded request ("" when there is none). */
export function lastUserText(request: RecordedChatRequest | undefined): string {
  const user = [...(request?.messages ?? [])].reverse().find((message) => message.role === "user");
  return recordedText(user?.content);
}
