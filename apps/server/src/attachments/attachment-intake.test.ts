import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AttachmentTooLargeError,
  type DownloadedAttachment,
  type InboundAttachment,
  type InboundMessage,
} from "@almanac/core";
import type { Transcriber } from "@almanac/llm";
import { OWNER_SCOPE, sharedScope } from "@almanac/memory-files";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type AttachmentDownload,
  AttachmentIntake,
  type AttachmentIntakeOptions,
} from "./attachment-intake.js";
import { attachmentNotices } from "./received-attachment.js";

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), "almanac-intake-"));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

/** 2026-12-06 12:00 UTC. */
const NOW = Date.UTC(2026, 11, 6, 12);

function intake(overrides: Partial<AttachmentIntakeOptions> = {}): AttachmentIntake {
  return new AttachmentIntake({
    workspace,
    scopeOf: (key) =>
      key.includes(":group:")
        ? sharedScope({ channel: "memory", account: "default", kind: "group", id: "g1" })
        : OWNER_SCOPE,
    timeZone: "UTC",
    maxBytes: 1_048_576,
    timeoutMs: 2_000,
    vision: true,
    clock: () => NOW,
    ...overrides,
  });
}

function message(attachments: InboundAttachment[], kind: "dm" | "group" = "dm"): InboundMessage {
  return {
    sessionKey: `memory:default:${kind}:${kind === "dm" ? "alice" : "g1"}`,
    channel: "memory",
    id: "m1",
    account: "default",
    conversation: { kind, id: "x" },
    sender: { id: "alice" },
    mentioned: true,
    text: "",
    attachments,
    receivedAt: NOW,
  };
}

/** A platform whose files are these bytes, by attachment id. */
function platform(
  files: Record<string, Uint8Array | (() => Promise<DownloadedAttachment>)>,
): AttachmentDownload {
  return async (attachment, limits) => {
    const file = files[attachment.id ?? ""];
    if (file === undefined) throw new Error("404 from the platform");
    if (typeof file === "function") return file();
    if (file.length > limits.maxBytes) throw new AttachmentTooLargeError(limits.maxBytes, file.length);
    return { bytes: file, ...(attachment.name === undefined ? {} : { name: attachment.name }) };
  };
}

const ogg = new Uint8Array([
  ...new TextEncoder().encode("OggS"),
  0,
  2,
  ...new Array(20).fill(0),
  1,
  19,
  ...new TextEncoder().encode("OpusHead"),
  1,
  1,
  0,
  0,
]);

describe("taking a message's attachments", () => {
  it("saves an image in the owner's inbox and shows it to a vision model; a group's in its own folder", async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: "#00f" } })
      .png()
      .toBuffer();
    const [owner] = await intake().receive(
      message([{ kind: "image", id: "p", name: "photo.jpg" }]),
      platform({ p: png }),
    );
    expect(owner).toMatchObject({
      status: "saved",
      kind: "image",
      originalName: "photo.jpg",
      path: "inbox/2026-12-06/photo.png",
      shown: true,
      type: { mime: "image/png" },
    });
    expect((await readFile(join(workspace, "inbox/2026-12-06/photo.png"))).equals(png)).toBe(true);

    const [group] = await intake({ vision: false }).receive(
      message([{ kind: "image", id: "p", name: "photo.png" }], "group"),
      platform({ p: png }),
    );
    expect(group).toMatchObject({
      status: "saved",
      path: "shared/memory-default-group-g1/inbox/2026-12-06/photo.png",
      shown: false,
    });
  });

  it("refuses a file over the limit without downloading it when its size is known, or when it arrives", async () => {
    let downloads = 0;
    const big = new Uint8Array(2 * 1_048_576);
    const received = await intake().receive(
      message([
        { kind: "file", id: "big", name: "big.zip", size: 30 * 1_048_576 },
        { kind: "file", id: "unsized", name: "unsized.zip" },
      ]),
      async (attachment, limits) => {
        downloads += 1;
        return platform({ unsized: big })(attachment, limits);
      },
    );
    expect(downloads).toBe(1);
    expect(received).toEqual([
      { status: "refused", kind: "file", originalName: "big.zip", problem: "it is larger than 1 MB (30 MB)" },
      {
        status: "refused",
        kind: "file",
        originalName: "unsized.zip",
        problem: "it is larger than 1 MB (2 MB)",
      },
    ]);
    expect(attachmentNotices(received)).toEqual([
      'I could not take the file "big.zip": it is larger than 1 MB (30 MB).',
      'I could not take the file "unsized.zip": it is larger than 1 MB (2 MB).',
    ]);
  });

  it("refuses a program sent as a photo, a download that fails and one that takes too long; keeps the others", async () => {
    const program = new Uint8Array(256);
    program.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0);
    const received = await intake({ timeoutMs: 200 }).receive(
      message([
        { kind: "image", id: "exe", name: "cute-cat.jpg" },
        { kind: "file", id: "gone", name: "gone.pdf" },
        { kind: "file", id: "slow", name: "slow.pdf" },
        { kind: "file", id: "note", name: "note.txt" },
      ]),
      async (attachment, limits) => {
        if (attachment.id === "slow")
          return new Promise((_, reject) =>
            limits.signal.addEventListener("abort", () => reject(limits.signal.reason)),
          );
        return platform({ exe: program, note: new TextEncoder().encode("buy milk") })(attachment, limits);
      },
    );
    expect(received.map((item) => (item.status === "refused" ? item.problem : item.status))).toEqual([
      "it is a Linux program (application/x-elf), so I did not save it",
      "the download failed",
      "the download took longer than 200 ms",
      "saved",
    ]);
  });

  it("transcribes a voice message and keeps the recording; without a transcriber the person is told", async () => {
    const heard: string[] = [];
    const transcriber: Transcriber = {
      modelName: "whisper-1",
      async transcribe(audio) {
        heard.push(`${audio.name} ${audio.contentType} ${audio.bytes.length}`);
        return "call Ann at five";
      },
    };
    const voice: InboundAttachment = { kind: "audio", voice: true, id: "v", durationMs: 4_000 };
    const [transcribed] = await intake({ transcriber }).receive(message([voice]), platform({ v: ogg }));
    expect(heard).toEqual([`voice-message.ogg audio/ogg ${ogg.length}`]);
    expect(transcribed).toMatchObject({
      status: "saved",
      kind: "voice message",
      path: "inbox/2026-12-06/voice-message.opus",
      transcript: { text: "call Ann at five" },
    });
    expect(attachmentNotices([transcribed!])).toEqual([]);

    const [untranscribed] = await intake().receive(message([voice]), platform({ v: ogg }));
    expect(untranscribed).toMatchObject({
      status: "saved",
      path: "inbox/2026-12-06/voice-message-2.opus",
      transcript: { notConfigured: true },
    });
    expect(attachmentNotices([untranscribed!])[0]).toMatch(/no transcription service is configured/);
  });

  it("describes what a channel that cannot download sent, without fetching anything", async () => {
    const received = await intake().receive(
      {
        ...message([{ kind: "file", name: "a.pdf", url: "https://cdn/a.pdf" }]),
        images: [{ type: "image", url: "https://cdn/b.png" }],
      },
      undefined,
    );
    expect(received).toEqual([
      { status: "not-downloaded", attachment: { kind: "image", url: "https://cdn/b.png" } },
      { status: "not-downloaded", attachment: { kind: "file", name: "a.pdf", url: "https://cdn/a.pdf" } },
    ]);
  });
});
