import { describe, expect, it } from "vitest";
import {
  createMessage,
  hasMark,
  imageAsText,
  messageText,
  toolCallsOf,
  toolResultsOf,
  withContent,
  withMark,
  withoutMark,
  workspaceFilePath,
  workspaceFileUrl,
} from "./message.js";
import { messageSchema } from "./message-schema.js";

describe("message model", () => {
  it("turns string content into one text block and fills id, timestamp and marks", () => {
    const message = createMessage({ role: "user", content: "hello" });
    expect(message.content).toEqual([{ type: "text", text: "hello" }]);
    expect(message.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(message.timestamp).toBeGreaterThan(0);
    expect(message.marks).toEqual([]);
  });

  it("is frozen so nobody mutates a message after creation", () => {
    const message = createMessage({ role: "user", content: "hello" });
    expect(Object.isFrozen(message)).toBe(true);
  });

  it("adds and removes marks without touching id or content", () => {
    const message = createMessage({ role: "assistant", content: "done" });
    const marked = withMark(message, "compacted");
    expect(hasMark(marked, "compacted")).toBe(true);
    expect(marked.id).toBe(message.id);
    expect(marked.content).toBe(message.content);
    expect(withMark(marked, "compacted")).toBe(marked);
    expect(hasMark(withoutMark(marked, "compacted"), "compacted")).toBe(false);
  });

  it("extracts text, tool calls and tool results by block type", () => {
    const assistant = createMessage({
      role: "assistant",
      content: [
        { type: "reasoning", text: "think" },
        { type: "text", text: "a" },
        { type: "tool_call", id: "c1", name: "read_file", arguments: "{}" },
        { type: "text", text: "b" },
      ],
    });
    expect(messageText(assistant)).toBe("a\nb");
    expect(toolCallsOf(assistant).map((call) => call.id)).toEqual(["c1"]);
    const tool = createMessage({
      role: "tool",
      content: [{ type: "tool_result", callId: "c1", content: "x" }],
    });
    expect(toolResultsOf(tool)).toHaveLength(1);
    expect(withContent(tool, []).content).toEqual([]);
  });

  it("validates stored messages with the schema and rejects unknown block types", () => {
    const message = createMessage({ role: "user", content: "hi", marks: ["pinned"] });
    expect(messageSchema.parse(JSON.parse(JSON.stringify(message)))).toEqual(message);
    const broken = { ...JSON.parse(JSON.stringify(message)), content: [{ type: "video", url: "x" }] };
    expect(messageSchema.safeParse(broken).success).toBe(false);
  });
});

describe("images that name workspace files", () => {
  it("round-trips a workspace path through its reference URL, and reads no other URL as one", () => {
    const url = workspaceFileUrl("inbox/2026-12-06/cat.png");
    expect(url).toBe("almanac-file:inbox/2026-12-06/cat.png");
    expect(workspaceFilePath(url)).toBe("inbox/2026-12-06/cat.png");
    expect(workspaceFilePath("https://cdn.example/cat.png")).toBeUndefined();
  });

  it("puts an image in words as its path or link, never the bytes of a data URL", () => {
    expect(imageAsText({ type: "image", url: "almanac-file:inbox/2026-12-06/cat.png" })).toBe(
      "[image: inbox/2026-12-06/cat.png]",
    );
    expect(imageAsText({ type: "image", url: "https://cdn.example/cat.png" })).toBe(
      "[image: https://cdn.example/cat.png]",
    );
    expect(imageAsText({ type: "image", url: "data:image/png;base64,iVBORw0KGgo=" })).toBe(
      "[image: inline data]",
    );
  });
});
