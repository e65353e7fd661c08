import { randomUUID } from "node:crypto";

/** Who produced a message, as in every chat-completions API. */
export type Role = "system" | "user" | "assistant" | "tool";

/** Plain text. */
export interface TextBlock {
  readonly type: "text";
  readonly text: string;
}

/** A reference to an image (a workspace file, `almanac-file:…`, or an http(s) URL); the bytes are never stored in the message. */
export interface ImageBlock {
  readonly type: "image";
  readonly url: string;
  readonly detail?: "auto" | "low" | "high";
}

/** A tool call requested by the model. `arguments` is the raw JSON text the model produced (untrusted). */
export interface ToolCallBlock {
  readonly type: "tool_call";
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The outcome of one tool call, answered by `callId`. */
export interface ToolResultBlock {
  readonly type: "tool_result";
  readonly callId: string;
  readonly content: string;
  readonly isError?: boolean;
}

/** Reasoning text, where a provider returns it (e.g. `reasoning_content`). */
export interface ReasoningBlock {
  readonly type: "reasoning";
  readonly text: string;
}

/** One piece of a message's content. */
export type ContentBlock = TextBlock | ImageBlock | ToolCallBlock | ToolResultBlock | ReasoningBlock;

/**
 * Marks record what Almanac did to a message without changing what was said.
 * `compacted`: summarized into the rolling summary and left out of the prompt (still in the transcript).
 * `compressed`: content shortened by a cheap lossless-in-spirit pass (the original lives in the transcript).
 */
export type MessageMark = "compacted" | "compressed" | "pinned" | (string & {});

/** The one message model used by every part of Almanac. Immutable: change it by creating a new one. */
export interface Message {
  readonly id: string;
  readonly role: Role;
  readonly name?: string;
  /** Milliseconds since the Unix epoch. */
  readonly timestamp: number;
  readonly content: readonly ContentBlock[];
  readonly marks: readonly MessageMark[];
}

/** Fields accepted by {@link createMessage}; id, timestamp and marks get defaults. */
export interface MessageInit {
  readonly id?: string;
  readonly role: Role;
  readonly name?: string;
  readonly timestamp?: number;
  readonly content: string | readonly ContentBlock[];
  readonly marks?: readonly MessageMark[];
}

/** Creates a new message id (UUID v4). */
export function createMessageId(): string {
  return randomUUID();
}

/** Builds an immutable message; a string content becomes one text block. */
export function createMessage(init: MessageInit): Message {
  const content: readonly ContentBlock[] =
    typeof init.content === "string" ? [{ type: "text", text: init.content }] : [...init.content];
  const message: Message = {
    id: init.id ?? createMessageId(),
    role: init.role,
    ...(init.name === undefined ? {} : { name: init.name }),
    timestamp: init.timestamp ?? Date.now(),
    content,
    marks: [...(init.marks ?? [])],
  };
  return Object.freeze(message);
}

/** All text blocks of a message joined with newlines (reasoning and tool blocks excluded). */
export function messageText(message: Message): string {
  return message.content
    .filter((block): block is TextBlock => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}

/** The tool calls an assistant message asks for, in order. */
export function toolCallsOf(message: Message): readonly ToolCallBlock[] {
  return message.content.filter((block): block is ToolCallBlock => block.type === "tool_call");
}

/** The tool results a tool message carries, in order. */
export function toolResultsOf(message: Message): readonly ToolResultBlock[] {
  return message.content.filter((block): block is ToolResultBlock => block.type === "tool_result");
}

/** True when the message carries the mark. */
export function hasMark(message: Message, mark: MessageMark): boolean {
  return message.marks.includes(mark);
}

/** A copy of the message with a mark added (same id, same content). */
export function withMark(message: Message, mark: MessageMark): Message {
  if (hasMark(message, mark)) return message;
  return Object.freeze({ ...message, marks: [...message.marks, mark] });
}

/** A copy of the message with a mark removed. */
export function withoutMark(message: Message, mark: MessageMark): Message {
  if (!hasMark(message, mark)) return message;
  return Object.freeze({ ...message, marks: message.marks.filter((existing) => existing !== mark) });
}

/** A copy of the message with new content (same id, timestamp and marks). */
export function withContent(message: Message, content: readonly ContentBlock[]): Message {
  return Object.freeze({ ...message, content: [...content] });
}

/**
 * The scheme of an image part that names a file in the workspace (`almanac-file:inbox/2026-12-06/photo.jpg`, relative
 * to the workspace root) instead of carrying its bytes: what messages and transcripts hold. The chat model turns it
 * into a `data:` URL only while it sends a request (docs/attachments.md), so no transcript ever holds base64.
 */
export const WORKSPACE_FILE_SCHEME = "almanac-file:";

/** The image URL of a workspace file (a `/`-separated path relative to the workspace root). */
export function workspaceFileUrl(relativePath: string): string {
  return `${WORKSPACE_FILE_SCHEME}${relativePath}`;
}

/** The workspace-relative path a {@link workspaceFileUrl} names, or undefined for any other URL. */
export function workspaceFilePath(url: string): string | undefined {
  return url.startsWith(WORKSPACE_FILE_SCHEME) ? url.slice(WORKSPACE_FILE_SCHEME.length) : undefined;
}

/**
 * An image part in words, where pixels cannot go (a text-only model, a summary, a log): `[image: inbox/…/photo.jpg]`
 * for a workspace file, the link for a remote image, never the bytes of a `data:` URL.
 */
export function imageAsText(block: ImageBlock): string {
  const path = workspaceFilePath(block.url);
  if (path !== undefined) return `[image: ${path}]`;
  if (block.url.startsWith("data:")) return "[image: inline data]";
  return `[image: ${block.url}]`;
}
