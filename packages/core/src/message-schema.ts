import { z } from "zod";
import type { ContentBlock, Message } from "./message.js";

const textBlockSchema = z.object({ type: z.literal("text"), text: z.string() });
const imageBlockSchema = z.object({
  type: z.literal("image"),
  url: z.string().min(1),
  detail: z.enum(["auto", "low", "high"]).optional(),
});
const toolCallBlockSchema = z.object({
  type: z.literal("tool_call"),
  id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});
const toolResultBlockSchema = z.object({
  type: z.literal("tool_result"),
  callId: z.string().min(1),
  content: z.string(),
  isError: z.boolean().optional(),
});
const reasoningBlockSchema = z.object({ type: z.literal("reasoning"), text: z.string() });

/** Schema of one content block, for validating untrusted JSON (snapshots, transcripts, API input). */
export const contentBlockSchema: z.ZodType<ContentBlock> = z.discriminatedUnion("type", [
  textBlockSchema,
  imageBlockSchema,
  toolCallBlockSchema,
  toolResultBlockSchema,
  reasoningBlockSchema,
]);

/** Schema of a whole message as stored on disk. */
export const messageSchema: z.ZodType<Message> = z.object({
  id: z.string().min(1),
  role: z.enum(["system", "user", "assistant", "tool"]),
  name: z.string().optional(),
  timestamp: z.number().finite(),
  content: z.array(contentBlockSchema),
  marks: z.array(z.string()),
});
