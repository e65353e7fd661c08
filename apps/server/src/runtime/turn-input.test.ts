import type { InboundMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { NO_TEXT_NOTE, userMessageOf } from "./turn-input.js";

const base: InboundMessage = {
  sessionKey: "discord:default:dm:1",
  channel: "discord",
  id: "m1",
  account: "default",
  conversation: { kind: "dm", id: "1" },
  sender: { id: "1" },
  mentioned: true,
  text: "",
  receivedAt: 1_000,
};

describe("the user message a turn starts with", () => {
  it("is never empty: a message with no text, image or attachment says so", () => {
    const message = userMessageOf(base);
    expect(message.content).toEqual([{ type: "text", text: NO_TEXT_NOTE }]);
    expect(message.timestamp).toBe(1_000);
  });

  it("describes each attachment the model cannot see, with name, type, size, length and link", () => {
    const message = userMessageOf({
      ...base,
      text: "see these",
      attachments: [
        { kind: "file", name: "a.pdf", contentType: "application/pdf", size: 2_048, url: "https://x/a.pdf" },
        { kind: "audio", voice: true, durationMs: 65_000 },
      ],
    });
    expect(message.content[0]).toEqual({ type: "text", text: "see these" });
    const note = message.content[1];
    expect(note?.type === "text" ? note.text : "").toBe(
      [
        "[The person sent 2 attachments. Almanac did not download them, so you cannot see the content; say so if you need it, and ask for it as text.]",
        '- file "a.pdf" (application/pdf, 2.0 KB), link: https://x/a.pdf',
        "- voice message (1 min 5 s)",
      ].join("\n"),
    );
  });

  it("keeps images as image parts after the text, and needs no note for an image alone", () => {
    const image = { type: "image" as const, url: "https://cdn/x.png" };
    expect(userMessageOf({ ...base, images: [image] }).content).toEqual([image]);
  });
});
