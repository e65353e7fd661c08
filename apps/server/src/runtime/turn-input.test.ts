import type { InboundMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { filesOfNote } from "../../../console/src/chat-files.js";
import { NO_TEXT_NOTE, receivedNote, userMessageOf } from "./turn-input.js";

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

  it("refers to saved files by their workspace path, shows images by reference, and says why others were not saved", () => {
    const image = { mime: "image/png", extension: "png", category: "image" } as const;
    const message = userMessageOf({ ...base, text: "what do you see?" }, [
      {
        status: "saved",
        kind: "image",
        originalName: "cat.png",
        path: "inbox/2026-12-06/cat.png",
        type: image,
        size: 52_000,
        shown: true,
      },
      {
        status: "saved",
        kind: "file",
        originalName: "report.pdf",
        path: "inbox/2026-12-06/report.pdf",
        type: { mime: "application/pdf", extension: "pdf", category: "document" },
        size: 2_048,
        shown: false,
      },
      {
        status: "refused",
        kind: "file",
        originalName: "big.zip",
        problem: "it is larger than 20 MB (30 MB)",
      },
      { status: "not-downloaded", attachment: { kind: "file", name: "x.doc", url: "https://cdn/x.doc" } },
    ]);
    expect(message.content).toEqual([
      { type: "text", text: "what do you see?" },
      {
        type: "text",
        text: [
          "[The person sent 3 attachments; files are saved in the workspace:]",
          '- image "cat.png" (image/png, 51 KB), saved as inbox/2026-12-06/cat.png; shown below',
          '- file "report.pdf" (application/pdf, 2.0 KB), saved as inbox/2026-12-06/report.pdf',
          '- file "big.zip": not saved, it is larger than 20 MB (30 MB); the person was told',
        ].join("\n"),
      },
      {
        type: "text",
        text: [
          "[The person sent an attachment. Almanac did not download it, so you cannot see the content; say so if you need it, and ask for it as text.]",
          '- file "x.doc", link: https://cdn/x.doc',
        ].join("\n"),
      },
      { type: "image", url: "almanac-file:inbox/2026-12-06/cat.png" },
    ]);
    expect(JSON.stringify(message)).not.toContain("base64");
  });

  it("uses a voice message's transcript as the message text, and tells a text-only model it cannot see", () => {
    const voice = { mime: "audio/ogg", extension: "opus", category: "audio" } as const;
    const message = userMessageOf(base, [
      {
        status: "saved",
        kind: "voice message",
        originalName: undefined,
        path: "inbox/2026-12-06/voice-message.opus",
        type: voice,
        size: 18_000,
        durationMs: 4_000,
        shown: false,
        transcript: { text: "remind me to call Ann" },
      },
      {
        status: "saved",
        kind: "image",
        originalName: undefined,
        path: "inbox/2026-12-06/image.jpg",
        type: { mime: "image/jpeg", extension: "jpg", category: "image" },
        size: 1_000,
        shown: false,
      },
    ]);
    expect(message.content).toEqual([
      { type: "text", text: "remind me to call Ann" },
      {
        type: "text",
        text: [
          "[The person sent 2 attachments; files are saved in the workspace:]",
          "- voice message (audio/ogg, 18 KB, 4 s), saved as inbox/2026-12-06/voice-message.opus; its transcript is the text above",
          "- image (image/jpeg, 1000 B), saved as inbox/2026-12-06/image.jpg; you cannot see images, so ask for a description if you need one",
        ].join("\n"),
      },
    ]);
  });

  it("names each saved file so the console reads its path back from the note", () => {
    const saved = (path: string, mime: string, extra: object = {}) =>
      ({
        status: "saved",
        kind: "file",
        originalName: undefined,
        path,
        type: { mime, extension: undefined, category: "document" },
        size: 2_048,
        shown: false,
        ...extra,
      }) as const;
    const paths = [
      "inbox/2026-12-06/report (final); v2.pdf",
      "shared/discord-default-group-g1/inbox/2026-12-06/cat.png",
      "inbox/2026-12-06/voice-message.opus",
      "inbox/2026-12-06/voice-message-2.opus",
    ];
    const note = receivedNote([
      saved(paths[0] as string, "application/pdf"),
      saved(paths[1] as string, "image/png", { shown: true }),
      saved(paths[2] as string, "audio/ogg", {
        kind: "voice message",
        transcript: { text: "hi" },
        durationMs: 4_000,
      }),
      saved(paths[3] as string, "audio/ogg", { kind: "voice message", transcript: { problem: "it failed" } }),
    ]);
    expect(filesOfNote(note)?.files.map((file) => file.path)).toEqual(paths);
    const blind = receivedNote([
      saved(paths[1] as string, "image/png", {
        kind: "image",
        type: { mime: "image/png", extension: "png", category: "image" },
      }),
    ]);
    expect(blind).toContain("you cannot see images");
    expect(filesOfNote(blind)?.files.map((file) => file.path)).toEqual([paths[1]]);
    expect(filesOfNote(note)?.rest).toEqual([]);
  });
});
