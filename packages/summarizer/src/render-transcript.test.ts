import { createMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { renderTranscript, trimMiddle } from "./render-transcript.js";

const at = (hour: number, minute: number) => Date.UTC(2024, 4, 1, hour, minute);

describe("renderTranscript", () => {
  it("shows an image as its workspace path or link, never the bytes of a data URL", () => {
    const entries = renderTranscript(
      [
        createMessage({
          role: "user",
          timestamp: at(1, 5),
          content: [
            { type: "text", text: "look" },
            { type: "image", url: "almanac-file:inbox/2024-05-01/photo.jpg" },
            { type: "image", url: "data:image/png;base64,iVBORw0KGgo=" },
          ],
        }),
      ],
      "UTC",
    );
    expect(entries).toEqual([
      "[01:05] user: look\n[image: inbox/2024-05-01/photo.jpg]\n[image: inline data]",
    ]);
  });

  it("renders role, local time and text, tool calls with short arguments, and trimmed tool results", () => {
    const messages = [
      createMessage({ role: "system", content: "You are Almanac.", timestamp: at(1, 0) }),
      createMessage({
        role: "user",
        name: "ann",
        content: "Deploy fails with ERR_OSSL_EVP_UNSUPPORTED",
        timestamp: at(1, 5),
      }),
      createMessage({
        role: "assistant",
        timestamp: at(1, 6),
        content: [
          { type: "reasoning", text: "secret thoughts" },
          { type: "text", text: "Let me look." },
          {
            type: "tool_call",
            id: "c1",
            name: "read_file",
            arguments: '{"path":"deploy/ci.yml","limit":50}',
          },
        ],
      }),
      createMessage({
        role: "tool",
        timestamp: at(1, 6),
        content: [{ type: "tool_result", callId: "c1", content: `node: 16\n${"x".repeat(1000)}` }],
      }),
    ];
    const entries = renderTranscript(messages, "Asia/Shanghai");
    expect(entries).toHaveLength(3);
    expect(entries[0]).toBe("[09:05] user (ann): Deploy fails with ERR_OSSL_EVP_UNSUPPORTED");
    expect(entries[1]).toBe(
      '[09:06] assistant: Let me look.\n[09:06] assistant called read_file(path: "deploy/ci.yml", limit: 50)',
    );
    expect(entries[2]).toMatch(/^\[09:06\] read_file result: node: 16 x+… \[\d+ more characters\]$/);
    expect(entries[2]?.length).toBeLessThan(400);
    expect(entries.join("\n")).not.toContain("secret thoughts");
  });

  it("shows invalid tool-call arguments as cut raw text instead of failing", () => {
    const message = createMessage({
      role: "assistant",
      timestamp: at(2, 0),
      content: [
        {
          type: "tool_call",
          id: "c1",
          name: "search",
          arguments: `{"query": "unterminated ${"y".repeat(500)}`,
        },
      ],
    });
    const [entry] = renderTranscript([message], "UTC");
    expect(entry).toMatch(
      /^\[02:00\] assistant called search\(\{"query": "unterminated y+… \[\d+ more characters\]\)$/,
    );
  });

  it("keeps the head and tail of a very long message and says how much was cut", () => {
    const text = `START ${"middle ".repeat(2000)} END`;
    const [entry] = renderTranscript(
      [createMessage({ role: "user", content: text, timestamp: at(3, 0) })],
      "UTC",
      {
        maxTextChars: 500,
      },
    );
    expect(entry).toContain("START");
    expect(entry).toContain("END");
    expect(entry).toMatch(/characters cut/);
    expect(trimMiddle("short", 10)).toBe("short");
  });
});
