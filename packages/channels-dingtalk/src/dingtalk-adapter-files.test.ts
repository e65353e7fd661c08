import { AttachmentTooLargeError, type InboundAttachment, type InboundMessage } from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Harness, startHarness } from "../test/adapter-harness.js";
import { isDingTalkError } from "./errors.js";

let harness: Harness | undefined;

beforeEach(() => {
  // dingtalk-stream prints "connect success" / "Disconnecting." with console.info itself.
  vi.spyOn(console, "info").mockImplementation(() => {});
});

afterEach(async () => {
  await harness?.close();
  harness = undefined;
  vi.restoreAllMocks();
});

async function start(): Promise<Harness> {
  harness = await startHarness();
  return harness;
}

/** Deterministic bytes that are not all alike. */
const bytesOf = (length: number): Uint8Array =>
  Uint8Array.from({ length }, (_, index) => (index * 31 + 7) % 256);
const MB = 1024 * 1024;
const limits = (maxBytes: number, signal: AbortSignal = new AbortController().signal) => ({
  maxBytes,
  signal,
});

function firstAttachment(message: InboundMessage): InboundAttachment {
  const attachment = message.attachments?.[0];
  if (attachment === undefined) throw new Error("the message has no attachment");
  return attachment;
}

describe("DingTalk adapter: receiving files", () => {
  it("downloads a picture by its download code within the limit", async () => {
    const { fake, adapter, nextInbound } = await start();
    const png = bytesOf(300_000);
    fake.addFile("code-picture", { bytes: png, contentType: "image/png" });
    fake.sendRobotMessage({
      conversation: "single",
      media: { type: "picture", downloadCode: "code-picture" },
    });
    const message = await nextInbound(1);
    expect(message.attachments).toEqual([{ kind: "image", id: "code-picture" }]);
    const downloaded = await adapter.downloadAttachment(message, firstAttachment(message), limits(MB));
    expect(Buffer.from(downloaded.bytes).equals(Buffer.from(png))).toBe(true);
    expect(downloaded.contentType).toBe("image/png");
    expect(fake.downloads()).toEqual([
      expect.objectContaining({ downloadCode: "code-picture", completed: true }),
    ]);
  });

  it("keeps a file's name, and downloads the pictures of a rich-text message with its text", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.addFile("code-file", { bytes: bytesOf(1_000), contentType: "application/pdf" });
    fake.addFile("code-inline", { bytes: bytesOf(2_000), contentType: "image/jpeg" });
    fake.sendRobotMessage({
      conversation: "single",
      media: { type: "file", downloadCode: "code-file", fileName: "report.pdf" },
    });
    fake.sendRobotMessage({
      conversation: "group",
      richText: [{ text: "What is in " }, { text: "this chart?" }, { picture: "code-inline" }],
    });
    const file = await nextInbound(1);
    const rich = await nextInbound(2);
    expect(file.attachments).toEqual([{ kind: "file", id: "code-file", name: "report.pdf" }]);
    expect(await adapter.downloadAttachment(file, firstAttachment(file), limits(MB))).toMatchObject({
      name: "report.pdf",
      contentType: "application/pdf",
    });
    expect(rich.text).toBe("What is in this chart?");
    const picture = await adapter.downloadAttachment(rich, firstAttachment(rich), limits(MB));
    expect(picture.bytes.length).toBe(2_000);
  });

  it("refuses a file over the limit from its stated length, and stops reading one of unstated length past it", async () => {
    const { fake, adapter, nextInbound } = await start();
    // Larger than what the sockets between the fake and the adapter can buffer, so an early stop shows.
    const size = 32 * MB;
    fake.addFile("code-big", { bytes: new Uint8Array(size) });
    fake.addFile("code-chunked", { bytes: new Uint8Array(size), declareLength: false });
    fake.sendRobotMessage({ conversation: "single", media: { type: "video", downloadCode: "code-big" } });
    fake.sendRobotMessage({ conversation: "single", media: { type: "file", downloadCode: "code-chunked" } });
    const big = await nextInbound(1);
    const chunked = await nextInbound(2);
    const stated = adapter.downloadAttachment(big, firstAttachment(big), limits(MB));
    await expect(stated).rejects.toSatisfy(
      (error) =>
        error instanceof AttachmentTooLargeError && error.sizeBytes === size && error.limitBytes === MB,
    );
    const unstated = adapter.downloadAttachment(chunked, firstAttachment(chunked), limits(MB));
    await expect(unstated).rejects.toSatisfy(
      (error) => error instanceof AttachmentTooLargeError && error.sizeBytes === undefined,
    );
    await vi.waitFor(() => expect(fake.downloads()).toHaveLength(2));
    for (const download of fake.downloads()) {
      expect(download.completed).toBe(false);
      expect(download.bytesSent).toBeLessThan(size);
    }
  });

  it("gives up a download when the deadline aborts it", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.addFile("code-slow", { bytes: bytesOf(100_000), stallAfterBytes: 10_000 });
    fake.sendRobotMessage({ conversation: "single", media: { type: "file", downloadCode: "code-slow" } });
    const message = await nextInbound(1);
    // The server's deadline for the message's downloads; the fake never sends the rest.
    const deadline = AbortSignal.timeout(200);
    const download = adapter.downloadAttachment(message, firstAttachment(message), limits(MB, deadline));
    await expect(download).rejects.toSatisfy((error) => isDingTalkError(error, "dingtalk.network"));
    await vi.waitFor(() =>
      expect(fake.downloads()).toEqual([expect.objectContaining({ bytesSent: 10_000, completed: false })]),
    );
  });

  it("follows no download URL that is not https, and says what DingTalk said of an unknown code", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.addFile("code-plain-http", { bytes: bytesOf(10), downloadUrl: "http://192.0.2.1/internal" });
    fake.sendRobotMessage({
      conversation: "single",
      media: { type: "file", downloadCode: "code-plain-http" },
    });
    fake.sendRobotMessage({ conversation: "single", media: { type: "file", downloadCode: "code-unknown" } });
    const plain = await nextInbound(1);
    const unknown = await nextInbound(2);
    await expect(adapter.downloadAttachment(plain, firstAttachment(plain), limits(MB))).rejects.toSatisfy(
      (error) => isDingTalkError(error, "dingtalk.download_failed") && error.message.includes("not https"),
    );
    await expect(adapter.downloadAttachment(unknown, firstAttachment(unknown), limits(MB))).rejects.toSatisfy(
      (error) =>
        isDingTalkError(error, "dingtalk.send_failed") &&
        error.platformCode === "InvalidParameter.DownloadCode",
    );
    expect(fake.downloads()).toEqual([]);
  });

  it("takes DingTalk's recognition of a voice message as its text; without one the recording is a voice message", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.addFile("code-voice", { bytes: bytesOf(4_000), contentType: "audio/amr" });
    fake.sendRobotMessage({
      conversation: "single",
      media: { type: "audio", downloadCode: "code-voice", duration: 2_500, recognition: "remind me at five" },
    });
    fake.sendRobotMessage({ conversation: "single", media: { type: "audio", downloadCode: "code-voice" } });
    const recognized = await nextInbound(1);
    const silent = await nextInbound(2);
    expect(recognized.text).toBe("remind me at five");
    expect(recognized.attachments).toEqual([{ kind: "audio", id: "code-voice", durationMs: 2_500 }]);
    expect(silent.text).toBe("");
    expect(silent.attachments).toEqual([{ kind: "audio", id: "code-voice", voice: true, durationMs: 3_000 }]);
    const recording = await adapter.downloadAttachment(recognized, firstAttachment(recognized), limits(MB));
    expect(recording).toMatchObject({ contentType: "audio/amr" });
  });
});

describe("DingTalk adapter: sending files", () => {
  it("uploads an image and posts it as a picture in the conversation, with its caption after it", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.sendRobotMessage({ conversation: "single", text: "send me the chart" });
    const inbound = await nextInbound(1);
    const png = bytesOf(50_000);
    await adapter.sendFile({
      sessionKey: inbound.sessionKey,
      name: "chart.png",
      bytes: png,
      contentType: "image/png",
      caption: "Here is the **chart**.",
      inReplyTo: inbound,
    });
    const [upload] = fake.uploads();
    expect(upload).toMatchObject({ type: "image", fileName: "chart.png", contentType: "image/png" });
    expect(Buffer.from(upload!.bytes).equals(Buffer.from(png))).toBe(true);
    expect(fake.sent()).toEqual([
      expect.objectContaining({
        route: "openapi",
        msgtype: "image",
        mediaId: upload!.mediaId,
        userIds: ["staff-001"],
      }),
      expect.objectContaining({
        route: "sessionWebhook",
        msgtype: "markdown",
        text: "Here is the **chart**.",
      }),
    ]);
  });

  it("uploads a document as a file message to a group by session key, fetching a new token when DingTalk calls it invalid", async () => {
    const { fake, adapter } = await start();
    await adapter.send({ sessionKey: "dingtalk:default:group:cid-files==", text: "files follow" });
    fake.expireAccessTokens();
    await adapter.sendFile({
      sessionKey: "dingtalk:default:group:cid-files==",
      name: "Q3 report.PDF",
      bytes: bytesOf(5_000),
      contentType: "application/pdf",
    });
    const [upload] = fake.uploads();
    expect(upload).toMatchObject({ type: "file", fileName: "Q3 report.PDF" });
    expect(fake.sent().at(-1)).toMatchObject({
      route: "openapi",
      msgtype: "file",
      conversationId: "cid-files==",
      mediaId: upload!.mediaId,
      fileName: "Q3 report.PDF",
      fileType: "pdf",
    });
    expect(fake.rejections().map((rejection) => [rejection.route, rejection.code])).toEqual([
      ["media", "40014"],
    ]);
    expect(fake.tokensIssued()).toBe(2);
  });

  it("refuses a file over DingTalk's 20 MB before uploading it, and sends a WebP image as a file", async () => {
    const { fake, adapter } = await start();
    const tooLarge = adapter.sendFile({
      sessionKey: "dingtalk:default:dm:staff-001",
      name: "video.mp4",
      bytes: new Uint8Array(20 * MB + 1),
      contentType: "video/mp4",
    });
    await expect(tooLarge).rejects.toSatisfy(
      (error) =>
        isDingTalkError(error, "dingtalk.upload_too_large") &&
        error.category === "user" &&
        error.message.includes("20 MB"),
    );
    await adapter.sendFile({
      sessionKey: "dingtalk:default:dm:staff-001",
      name: "sticker.webp",
      bytes: bytesOf(100),
      contentType: "image/webp",
    });
    expect(fake.uploads().map((upload) => [upload.type, upload.fileName])).toEqual([
      ["file", "sticker.webp"],
    ]);
    expect(fake.sent()).toEqual([expect.objectContaining({ msgtype: "file", fileType: "webp" })]);
  });
});
