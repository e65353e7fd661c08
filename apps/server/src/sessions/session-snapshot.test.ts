import { createMessage, type Message } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { SESSION_TITLE_MAX_CHARS, sessionSnapshotSchema, sessionTitle } from "./session-snapshot.js";

const user = (content: Message["content"] | string): Message => createMessage({ role: "user", content });
const assistant = (content: string): Message => createMessage({ role: "assistant", content });

describe("a session's title", () => {
  it("is the text of its first user message, with whitespace collapsed", () => {
    const messages = [
      assistant("Welcome back."),
      user("  How do\n\ttides   work?  "),
      assistant("The moon."),
      user("And the sun?"),
    ];
    expect(sessionTitle(messages)).toBe("How do tides work?");
  });

  it("is cut to 60 characters with an ellipsis, never inside a character", () => {
    const long = `${"🌊".repeat(40)} and a great deal more about the sea`;
    const title = sessionTitle([user(long)]) ?? "";
    expect(Array.from(title)).toHaveLength(SESSION_TITLE_MAX_CHARS);
    expect(title.endsWith("…")).toBe(true);
    expect(title.startsWith("🌊".repeat(40))).toBe(true);
    // Exactly at the limit nothing is cut.
    const exact = "x".repeat(SESSION_TITLE_MAX_CHARS);
    expect(sessionTitle([user(exact)])).toBe(exact);
  });

  it("is what the person wrote, not the attachment note after it", () => {
    const withFiles = user([
      { type: "text", text: "  here is\nthe menu " },
      { type: "text", text: "[The person sent an attachment; files are saved in the workspace:]\n- file …" },
    ]);
    expect(sessionTitle([withFiles])).toBe("here is the menu");
  });

  it("skips user messages without text and is undefined while there is none", () => {
    const imageOnly = user([{ type: "image", url: "https://example.com/a.png" }]);
    expect(sessionTitle([imageOnly, assistant("A picture.")])).toBeUndefined();
    expect(sessionTitle([imageOnly, user("What is in it?")])).toBe("What is in it?");
    expect(sessionTitle([])).toBeUndefined();
  });

  it("is kept by the snapshot schema, and a snapshot without one still reads", () => {
    const snapshot = {
      version: 1,
      key: "web:default:web:tides",
      createdAt: 1,
      updatedAt: 2,
      memory: {},
      stats: { turns: 1, compactions: 0, lastActivity: 2, title: "How do tides work?" },
    };
    expect(sessionSnapshotSchema.parse(snapshot).stats.title).toBe("How do tides work?");
    const { title: _title, ...older } = snapshot.stats;
    expect(sessionSnapshotSchema.parse({ ...snapshot, stats: older }).stats.title).toBeUndefined();
  });
});
