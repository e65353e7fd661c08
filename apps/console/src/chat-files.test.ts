import { describe, expect, it } from "vitest";
import { chatLinesOf, filesOfNote, kindOf, sentFileOf } from "./chat-files.js";

const NOTE = [
  "[The person sent 4 attachments; files are saved in the workspace:]",
  '- image "cat.png" (image/png, 51 KB), saved as inbox/2026-12-06/cat.png; shown below',
  "- voice message (audio/ogg, 18 KB, 4 s), saved as inbox/2026-12-06/voice-message.opus; its transcript is the text above",
  '- file "my report (final).pdf" (application/pdf, 2.5 MB), saved as shared/discord-default-group-g1/inbox/2026-12-06/my report (final).pdf',
  '- file "big.zip": not saved, it is larger than 20 MB (30 MB); the person was told',
].join("\n");

describe("files in the console chat", () => {
  it("reads each saved file of the server's attachment note, and keeps what was not saved as text", () => {
    expect(filesOfNote(NOTE)).toEqual({
      files: [
        { name: "cat.png", kind: "image", path: "inbox/2026-12-06/cat.png" },
        { name: "voice-message.opus", kind: "audio", path: "inbox/2026-12-06/voice-message.opus" },
        {
          name: "my report (final).pdf",
          kind: "file",
          path: "shared/discord-default-group-g1/inbox/2026-12-06/my report (final).pdf",
        },
      ],
      rest: ['file "big.zip": not saved, it is larger than 20 MB (30 MB); the person was told'],
    });
    expect(filesOfNote("[The person sent an attachment. Almanac did not download it]")).toBeUndefined();
    expect(filesOfNote("saved as inbox/2026-12-06/cat.png")).toBeUndefined();
  });

  it("shows only what browsers draw or play inline, by the server's type first", () => {
    expect(kindOf("a.png", "image/png")).toBe("image");
    expect(kindOf("a.heic", "image/heic")).toBe("file");
    expect(kindOf("photo.jpg", "application/pdf")).toBe("file");
    expect(kindOf("voice.amr", "audio/amr")).toBe("file");
    expect(kindOf("voice.opus")).toBe("audio");
    expect(kindOf("logo.svg")).toBe("file");
    expect(kindOf("pasted.png", "")).toBe("image");
  });

  it("reads a file send_file sent from its result, with the caption of its arguments", () => {
    expect(
      sentFileOf(
        "Sent notes/a (1).png (image/png, 3 KB); it is shown in this conversation.",
        '{"path":"x","caption":" hi "}',
      ),
    ).toEqual({ name: "a (1).png", kind: "image", path: "notes/a (1).png", caption: "hi" });
    expect(sentFileOf("Sent notes/list.txt (text/plain, 10 B) to this conversation.", "not json")).toEqual({
      name: "list.txt",
      kind: "file",
      path: "notes/list.txt",
    });
    expect(sentFileOf("This chat cannot receive files", "{}")).toBeUndefined();
  });

  it("builds the chat from a transcript: notes become files, a sent file joins the reply it was sent in", () => {
    const messages = [
      {
        role: "user",
        timestamp: 1,
        content: [
          { type: "text", text: "look" },
          { type: "text", text: NOTE },
          { type: "image", url: "almanac-file:inbox/2026-12-06/cat.png" },
        ],
      },
      {
        role: "assistant",
        timestamp: 2,
        content: [
          { type: "tool_call", id: "c1", name: "send_file", arguments: '{"path":"notes/dog.png"}' },
          { type: "tool_call", id: "c2", name: "send_file", arguments: '{"path":"../x"}' },
          { type: "tool_call", id: "c3", name: "memory_search", arguments: '{"query":"dogs"}' },
        ],
      },
      {
        role: "tool",
        timestamp: 3,
        content: [
          {
            type: "tool_result",
            callId: "c1",
            content: "Sent notes/dog.png (image/png, 2 KB); it is shown.",
          },
          { type: "tool_result", callId: "c2", content: "send_file failed: not allowed", isError: true },
          { type: "tool_result", callId: "c3", content: "Sent nothing (a/b, c) to you." },
        ],
      },
      { role: "assistant", timestamp: 4, content: [{ type: "text", text: "Here is the dog." }] },
      {
        role: "assistant",
        timestamp: 5,
        content: [{ type: "tool_call", id: "c4", name: "send_file", arguments: '{"path":"a.txt"}' }],
      },
      {
        role: "tool",
        timestamp: 6,
        content: [
          {
            type: "tool_result",
            callId: "c4",
            content: "Sent a.txt (text/plain, 1 B) to this conversation.",
          },
        ],
      },
      { role: "user", timestamp: 7, content: [{ type: "text", text: "thanks" }] },
      {
        role: "assistant",
        timestamp: 8,
        content: [{ type: "tool_call", id: "c5", name: "send_file", arguments: '{"path":"b.txt"}' }],
      },
      {
        role: "tool",
        timestamp: 9,
        content: [
          {
            type: "tool_result",
            callId: "c5",
            content: "Sent b.txt (text/plain, 1 B) to this conversation.",
          },
        ],
      },
    ];
    const lines = chatLinesOf(messages);
    expect(lines.map((line) => [line.role, line.text, (line.files ?? []).map((file) => file.path)])).toEqual([
      [
        "user",
        'look\nfile "big.zip": not saved, it is larger than 20 MB (30 MB); the person was told',
        [
          "inbox/2026-12-06/cat.png",
          "inbox/2026-12-06/voice-message.opus",
          "shared/discord-default-group-g1/inbox/2026-12-06/my report (final).pdf",
        ],
      ],
      ["assistant", '[tool call] memory_search({"query":"dogs"})', []],
      ["assistant", "Here is the dog.", ["notes/dog.png", "a.txt"]],
      ["user", "thanks", []],
      ["assistant", "", ["b.txt"]],
    ]);
    expect(lines[0]?.at).toBe(1);
  });
});

describe("a turn the schedule started", () => {
  it("shows the task's heading as a note, not as the person's message", () => {
    const lines = chatLinesOf([
      {
        role: "user",
        timestamp: 5,
        marks: ["scheduled"],
        content: [
          {
            type: "text",
            text: '[Scheduled task T7K2M "Stretch", due Sun 6 Dec 09:00]\nRemind them to stretch.\n\n(This message is from the schedule, not from the person.)',
          },
        ],
      },
      { role: "assistant", timestamp: 6, marks: [], content: [{ type: "text", text: "Time to stretch!" }] },
    ]);
    expect(lines).toEqual([
      { role: "user", scheduled: true, text: 'Scheduled task T7K2M "Stretch", due Sun 6 Dec 09:00', at: 5 },
      { role: "assistant", text: "Time to stretch!", at: 6 },
    ]);
  });
});
