import { createMessage, messageText, withMark } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { buildPrompt } from "./prompt.js";
import { WorkingMemory } from "./working-memory.js";

describe("buildPrompt", () => {
  it("sends the system prompt first and then only the uncompacted messages", () => {
    const compacted = withMark(createMessage({ role: "user", content: "long ago" }), "compacted");
    const recent = createMessage({ role: "user", content: "now" });
    const prompt = buildPrompt({
      systemPrompt: "You are Almanac.",
      memory: new WorkingMemory({ messages: [compacted, recent] }),
    });
    expect(prompt.map((message) => message.role)).toEqual(["system", "user"]);
    expect(messageText(prompt[0]!)).toBe("You are Almanac.");
    expect(prompt[1]).toBe(recent);
  });

  it("puts the rolling summary in a delimited block introduced as background, after the system prompt", () => {
    const memory = new WorkingMemory({
      summary: { text: "The user is planning a trip to Kyoto.", updatedAt: 1, compactions: 1 },
    });
    const system = messageText(buildPrompt({ systemPrompt: "You are Almanac.", memory })[0]!);
    expect(system.startsWith("You are Almanac.")).toBe(true);
    expect(system).toMatch(/background, not a new request/);
    expect(system).toContain(
      "<conversation-summary>\nThe user is planning a trip to Kyoto.\n</conversation-summary>",
    );
  });

  it("sends no system message when there is neither a system prompt nor a summary", () => {
    const user = createMessage({ role: "user", content: "hi" });
    expect(buildPrompt({ systemPrompt: "  ", memory: new WorkingMemory({ messages: [user] }) })).toEqual([
      user,
    ]);
  });
});
