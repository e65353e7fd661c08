import type { ToolOutput } from "@almanac/agent";
import { z } from "zod";

const contentItem = z
  .object({
    type: z.string(),
    text: z.string().optional(),
    mimeType: z.string().optional(),
    data: z.string().optional(),
    uri: z.string().optional(),
    name: z.string().optional(),
    resource: z
      .object({ uri: z.string().optional(), mimeType: z.string().optional(), text: z.string().optional() })
      .loose()
      .optional(),
  })
  .loose();

const callToolResult = z
  .object({
    content: z.array(contentItem).optional(),
    structuredContent: z.unknown().optional(),
    isError: z.boolean().optional(),
    /** The result shape of protocol version 2024-10-07. */
    toolResult: z.unknown().optional(),
  })
  .loose();

/** Bytes a base64 text stands for. */
function decodedBytes(base64: string): number {
  return Math.floor((base64.replace(/=+$/, "").length * 3) / 4);
}

function describeItem(item: z.infer<typeof contentItem>): string {
  switch (item.type) {
    case "text":
      return item.text ?? "";
    case "image":
    case "audio":
      // Never base64 into the context: what it is and how large, the model can say so.
      return `[${item.type}: ${item.mimeType ?? "unknown type"}, ${decodedBytes(item.data ?? "")} bytes, not shown]`;
    case "resource_link":
      return `[resource link: ${item.name ?? ""} ${item.uri ?? ""}]`.replace("  ", " ");
    case "resource": {
      const resource = item.resource ?? {};
      if (resource.text !== undefined) return `[resource ${resource.uri ?? ""}]\n${resource.text}`;
      return `[resource ${resource.uri ?? ""}: ${resource.mimeType ?? "binary"}, not shown]`;
    }
    default:
      return `[${item.type} content, not shown]`;
  }
}

/**
 * A `tools/call` result as the model reads it: the text parts in order, other parts described in one line each
 * (images and binary resources are never pasted in), structured content as JSON when there is no text.
 * A result that is not a valid `CallToolResult` is a tool error, not an exception.
 */
export function toToolOutput(result: unknown, what: string): ToolOutput {
  const parsed = callToolResult.safeParse(result);
  if (!parsed.success) {
    return { content: `${what} answered with a result that is not a valid MCP tool result.`, isError: true };
  }
  const { content = [], structuredContent, isError, toolResult } = parsed.data;
  const parts = content.map(describeItem).filter((part) => part !== "");
  if (parts.length === 0 && structuredContent !== undefined) parts.push(JSON.stringify(structuredContent));
  if (parts.length === 0 && toolResult !== undefined) parts.push(JSON.stringify(toolResult));
  const text = parts.length === 0 ? "(the tool returned nothing)" : parts.join("\n");
  return isError === true ? { content: text, isError: true } : text;
}
