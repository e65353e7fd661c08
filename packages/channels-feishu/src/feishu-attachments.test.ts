import { AttachmentTooLargeError, type InboundMessage, isAlmanacError } from "@almanac/core";
import { waitUntil } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../test/adapter-harness.js";
import { convertContent } from "./convert-inbound.js";
import { FeishuApiError } from "./errors.js";
import { planUpload } from "./outbound-file.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const start = async () => {
  harness = await startHarness({ settings: { mode: "webhook", verificationToken: "vt" } });
  return harness;
};

const BOT = "ou_bot";
const MB = 1024 * 1024;

/** A message as the adapter delivered it, with the attachments a test downloads. */
const message = (id: string): InboundMessage => ({
  sessionKey: "feishu:default:dm:ou_user_1",
  channel: "feishu",
  id,
  account: "default",
  conversation: { kind: "dm", id: "oc_p2p_ou_user_1" },
  sender: { id: "ou_user_1" },
  mentioned: true,
  text: "",
  receivedAt: 0,
});

const limits = (maxBytes: number, signal = new AbortController().signal) => ({ maxBytes, signal });

describe("Feishu attachments in messages", () => {
  it("makes images, files, voice messages, videos and a post's pictures downloadable attachments", () => {
    expect(convertContent("image", JSON.stringify({ image_key: "img_1" }), [], BOT).attachments).toEqual([
      { kind: "image", id: "img_1" },
    ]);
    expect(
      convertContent("audio", JSON.stringify({ file_key: "file_voice", duration: 4200 }), [], BOT)
        .attachments,
    ).toEqual([{ kind: "audio", voice: true, id: "file_voice", durationMs: 4200 }]);
    const video = { file_key: "file_video", image_key: "img_cover", file_name: "clip.mp4", duration: 9000 };
    expect(convertContent("media", JSON.stringify(video), [], BOT).attachments).toEqual([
      { kind: "video", id: "file_video", name: "clip.mp4", durationMs: 9000 },
    ]);
    const post = {
      title: "",
      content: [[{ tag: "text", text: "look" }], [{ tag: "img", image_key: "img_in_post" }]],
    };
    expect(convertContent("post", JSON.stringify(post), [], BOT)).toEqual({
      text: "look",
      attachments: [{ kind: "image", id: "img_in_post" }],
    });
  });
});

describe("FeishuAdapter.downloadAttachment", () => {
  it("downloads an image by type=image and a file by type=file, with the type and name Feishu states", async () => {
    const { adapter, fake } = await start();
    const png = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]);
    fake.addResource("om_photo", "img_1", { bytes: png, type: "image", contentType: "image/png" });
    const pdf = new TextEncoder().encode("%PDF-1.4 tiny");
    fake.addResource("om_doc", "file_1", {
      bytes: pdf,
      type: "file",
      contentType: "application/pdf",
      fileName: "季度 report.pdf",
    });
    const image = await adapter.downloadAttachment(
      message("om_photo"),
      { kind: "image", id: "img_1" },
      limits(MB),
    );
    expect(image).toEqual({ bytes: png, contentType: "image/png" });
    const file = await adapter.downloadAttachment(
      message("om_doc"),
      { kind: "file", id: "file_1" },
      limits(MB),
    );
    expect(file).toEqual({ bytes: pdf, contentType: "application/pdf", name: "季度 report.pdf" });
    const voice = new Uint8Array([79, 103, 103, 83]);
    fake.addResource("om_voice", "file_v", { bytes: voice, type: "file" });
    const audio = await adapter.downloadAttachment(
      message("om_voice"),
      { kind: "audio", voice: true, id: "file_v" },
      limits(MB),
    );
    expect(audio.bytes).toEqual(voice);
    const [request] = fake.requests().filter((entry) => entry.path.includes("/resources/"));
    expect(request).toMatchObject({
      query: { type: "image" },
      authorization: expect.stringMatching(/^Bearer t-/),
    });
  });

  it("refuses a file over the limit by its stated length, and by what it read when no length is stated", async () => {
    const { adapter, fake } = await start();
    fake.addResource("om_big", "file_big", { bytes: new Uint8Array(3 * MB), type: "file" });
    const stated = await adapter
      .downloadAttachment(message("om_big"), { kind: "file", id: "file_big" }, limits(2 * MB))
      .catch((caught: unknown) => caught);
    expect(stated).toBeInstanceOf(AttachmentTooLargeError);
    expect(stated).toMatchObject({ limitBytes: 2 * MB, sizeBytes: 3 * MB });

    fake.addResource("om_chunked", "file_chunked", {
      bytes: new Uint8Array(3 * MB),
      type: "file",
      omitLength: true,
    });
    const read = await adapter
      .downloadAttachment(message("om_chunked"), { kind: "file", id: "file_chunked" }, limits(2 * MB))
      .catch((caught: unknown) => caught);
    expect(read).toBeInstanceOf(AttachmentTooLargeError);
    expect(read).toMatchObject({ limitBytes: 2 * MB, sizeBytes: undefined });
  });

  it("stops a stalled download when the signal aborts", async () => {
    const { adapter, fake } = await start();
    fake.addResource("om_slow", "file_slow", {
      bytes: new Uint8Array(MB),
      type: "file",
      stallAfterBytes: 1000,
    });
    const controller = new AbortController();
    const download = adapter.downloadAttachment(
      message("om_slow"),
      { kind: "file", id: "file_slow" },
      limits(2 * MB, controller.signal),
    );
    const outcome = download.catch((caught: unknown) => caught);
    // Abort once Feishu is answering: the first bytes went out, the rest never comes.
    await waitUntil(() => fake.requests().some((request) => request.path.endsWith("/file_slow")));
    controller.abort();
    const error = await outcome;
    expect(error).toBeInstanceOf(FeishuApiError);
    expect(String((error as Error).message)).toMatch(/cancelled/);
  });

  it("says what Feishu answered when the resource is not in the message", async () => {
    const { adapter } = await start();
    const error = await adapter
      .downloadAttachment(message("om_none"), { kind: "file", id: "file_missing" }, limits(MB))
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: "feishu.api_error", platformCode: 234003, status: 400 });
  });
});

describe("FeishuAdapter.sendFile", () => {
  const question = { ...message("om_question"), text: "send me the chart" };

  it("uploads an image and replies with an image message, then the caption", async () => {
    const { adapter, fake } = await start();
    const png = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 1, 2, 3]);
    await adapter.sendFile({
      sessionKey: question.sessionKey,
      name: "chart.png",
      bytes: png,
      contentType: "image/png",
      caption: "Here is the chart.",
      inReplyTo: question,
    });
    const [upload] = fake.uploads();
    expect(upload).toMatchObject({ kind: "image", type: "message", fileName: "chart.png" });
    expect(upload?.bytes).toEqual(png);
    expect(fake.sent()).toMatchObject([
      { kind: "reply", replyTo: "om_question", msgType: "image", content: { image_key: upload?.key } },
      { kind: "reply", replyTo: "om_question", msgType: "post" },
    ]);
    expect(JSON.stringify(fake.sent()[1]?.content)).toContain("Here is the chart.");
  });

  it("uploads a document as a file with its file_type, and a recording as a voice message", async () => {
    const { adapter, fake } = await start();
    const session = "feishu:default:group:oc_team";
    await adapter.sendFile({
      sessionKey: session,
      name: "plan.xlsx",
      bytes: new Uint8Array([80, 75, 3, 4]),
      contentType: "application/octet-stream",
    });
    await adapter.sendFile({
      sessionKey: session,
      name: "note.opus",
      bytes: new Uint8Array([79, 103, 103, 83]),
      contentType: "audio/ogg",
    });
    expect(fake.uploads()).toMatchObject([
      { kind: "file", type: "xls", fileName: "plan.xlsx" },
      { kind: "file", type: "opus", fileName: "note.opus" },
    ]);
    expect(fake.sent()).toMatchObject([
      {
        kind: "create",
        receiveId: "oc_team",
        msgType: "file",
        content: { file_key: fake.uploads()[0]?.key },
      },
      {
        kind: "create",
        receiveId: "oc_team",
        msgType: "audio",
        content: { file_key: fake.uploads()[1]?.key },
      },
    ]);
  });

  it("sends an image over 10 MB as a file and refuses anything over 30 MB with a typed error", async () => {
    expect(
      planUpload({ name: "huge.png", bytes: new Uint8Array(11 * MB), contentType: "image/png" }),
    ).toEqual({
      kind: "file",
      fileType: "stream",
      msgType: "file",
    });
    expect(
      planUpload({ name: "scan.pdf", bytes: new Uint8Array(10), contentType: "application/pdf" }),
    ).toEqual({
      kind: "file",
      fileType: "pdf",
      msgType: "file",
    });
    const { adapter, fake } = await start();
    const error = await adapter
      .sendFile({
        sessionKey: question.sessionKey,
        name: "backup.zip",
        bytes: new Uint8Array(30 * MB + 1),
        contentType: "application/zip",
      })
      .catch((caught: unknown) => caught);
    expect(isAlmanacError(error)).toBe(true);
    expect(error).toMatchObject({ code: "feishu.upload_too_large", category: "user" });
    expect(String((error as Error).message)).toContain("30 MB");
    expect(fake.uploads()).toEqual([]);
    expect(fake.sent()).toEqual([]);
  });
});
