import { createMessage, type Message } from "@almanac/core";
import { toOpenAIMessagesJson } from "@almanac/openai-wire";
import { describe, expect, it } from "vitest";
import { prepareImages } from "./prepare-images.js";

const photo = "almanac-file:inbox/2026-12-06/photo.jpg";

function userWith(...urls: string[]): Message {
  return createMessage({
    role: "user",
    content: [
      { type: "text", text: "what is this?" },
      ...urls.map((url) => ({ type: "image" as const, url })),
    ],
  });
}

describe("image parts in a model request", () => {
  it("leaves a request without images untouched (the same array)", async () => {
    const messages = [createMessage({ role: "user", content: "hi" })];
    expect(await prepareImages(messages, { vision: true })).toBe(messages);
  });

  it("gives a text-only model the note with the saved path, never an image part", async () => {
    const message = userWith(photo, "https://cdn.example/x.png");
    const [prepared] = await prepareImages([message], { vision: false, resolveImage: async () => "data:x" });
    expect(prepared?.content).toEqual([
      { type: "text", text: "what is this?" },
      { type: "text", text: "[image: inbox/2026-12-06/photo.jpg]" },
      { type: "text", text: "[image: https://cdn.example/x.png]" },
    ]);
    // The same copy every request, so its wire JSON is cached like the original's.
    const [again] = await prepareImages([message], { vision: false });
    expect(again).toBe(prepared);
    expect(Object.isFrozen(prepared)).toBe(true);
  });

  it("resolves a workspace reference to a data URL for a vision model, in a copy whose JSON is never cached", async () => {
    const message = userWith(photo);
    const asked: string[] = [];
    const [prepared] = await prepareImages([message], {
      resolveImage: async (url) => {
        asked.push(url);
        return "data:image/jpeg;base64,/9j/AA==";
      },
    });
    expect(asked).toEqual([photo]);
    expect(prepared?.content[1]).toEqual({ type: "image", url: "data:image/jpeg;base64,/9j/AA==" });
    expect(Object.isFrozen(prepared)).toBe(false);
    expect(message.content[1]).toEqual({ type: "image", url: photo });
    // The stored message's wire form still holds the reference only.
    expect(toOpenAIMessagesJson([message])).toContain(photo);
    expect(toOpenAIMessagesJson([message])).not.toContain("base64");
  });

  it("falls back to the note when a reference cannot be resolved (the file is gone)", async () => {
    const [prepared] = await prepareImages([userWith(photo)], { resolveImage: async () => undefined });
    expect(prepared?.content[1]).toEqual({ type: "text", text: "[image: inbox/2026-12-06/photo.jpg]" });
  });
});
