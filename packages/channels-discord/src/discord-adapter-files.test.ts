import {
  AttachmentTooLargeError,
  type InboundAttachment,
  type InboundMessage,
  UserError,
} from "@almanac/core";
import { waitUntil } from "@almanac/testkit/discord";
import { afterEach, describe, expect, it } from "vitest";
import { type AdapterHarness, createAdapterHarness } from "../test/adapter-harness.js";
import { discordCdnOrigins } from "./attachment-download.js";
import { DiscordApiError } from "./errors.js";
import { DISCORD_UPLOAD_LIMIT_BYTES } from "./types.js";

let harness: AdapterHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** A harness whose downloads go through `fetch` (default the global one), started. */
async function started(fetch?: typeof globalThis.fetch): Promise<AdapterHarness> {
  harness = await createAdapterHarness(fetch === undefined ? {} : { adapter: { fetch } });
  await harness.start();
  return harness;
}

const limits = (maxBytes: number, signal = new AbortController().signal) => ({ maxBytes, signal });

/** Dispatches a DM with `attachments` and returns it as the adapter delivered it. */
async function receive(
  current: AdapterHarness,
  attachments: Parameters<AdapterHarness["fake"]["dispatchMessage"]>[0]["attachments"],
): Promise<InboundMessage> {
  const event = current.fake.dispatchMessage({ where: "dm", content: "see attached", attachments });
  return current.received((message) => message.id === event.d.id);
}

function only(message: InboundMessage): InboundAttachment {
  const [attachment] = message.attachments ?? [];
  if (attachment === undefined) throw new Error("the message has no attachment");
  return attachment;
}

describe("downloading attachments", () => {
  it("downloads an image's bytes from the CDN URL the message carries, without the bot token", async () => {
    const { adapter, fake } = await started();
    const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const message = await receive(harness!, [{ filename: "cat.png", contentType: "image/png", bytes }]);
    const downloaded = await adapter.downloadAttachment(message, only(message), limits(1024));
    expect(downloaded).toEqual({ bytes, contentType: "image/png", name: "cat.png" });
    expect(fake.cdnRequests()).toMatchObject([{ status: 200, authorization: false }]);
  });

  it("refuses a file whose stated size is over the limit before requesting anything", async () => {
    const { adapter, fake } = await started();
    const message = await receive(harness!, [
      { filename: "big.zip", contentType: "application/zip", size: 30 * 1024 * 1024 },
    ]);
    const refusal = adapter.downloadAttachment(message, only(message), limits(20 * 1024 * 1024));
    await expect(refusal).rejects.toBeInstanceOf(AttachmentTooLargeError);
    await expect(refusal).rejects.toMatchObject({
      sizeBytes: 30 * 1024 * 1024,
      limitBytes: 20 * 1024 * 1024,
    });
    expect(fake.cdnRequests()).toEqual([]);
  });

  it("refuses by the CDN's Content-Length when the message understated the size, leaving the rest unsent", async () => {
    const { adapter, fake } = await started();
    const size = 16 * 1024 * 1024;
    const message = await receive(harness!, [
      {
        filename: "liar.bin",
        contentType: "application/octet-stream",
        bytes: new Uint8Array(size),
        size: 10,
      },
    ]);
    expect(only(message).size).toBe(10);
    await expect(adapter.downloadAttachment(message, only(message), limits(64 * 1024))).rejects.toMatchObject(
      {
        limitBytes: 64 * 1024,
        sizeBytes: size,
      },
    );
    const [request] = await waitUntil(() => fake.cdnRequests().length === 1 && fake.cdnRequests());
    expect(request?.bytesSent).toBeLessThan(size);
  });

  it("aborts a stream that passes the limit without a Content-Length, leaving the rest unsent", async () => {
    const withoutLength: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const headers = new Headers(response.headers);
      headers.delete("content-length");
      return new Response(response.body, { status: response.status, headers });
    };
    const { adapter, fake } = await started(withoutLength);
    const size = 32 * 1024 * 1024;
    const message = await receive(harness!, [
      { filename: "huge.bin", bytes: new Uint8Array(size), size: 10 },
    ]);
    await expect(
      adapter.downloadAttachment(message, only(message), limits(256 * 1024)),
    ).rejects.toMatchObject({
      limitBytes: 256 * 1024,
      sizeBytes: undefined,
    });
    const [request] = await waitUntil(() => fake.cdnRequests().length === 1 && fake.cdnRequests());
    expect(request?.bytesSent).toBeLessThan(size);
  });

  it("gives up a download when its signal aborts", async () => {
    const controller = new AbortController();
    const abortOnHeaders: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      controller.abort();
      return response;
    };
    const { adapter, fake } = await started(abortOnHeaders);
    const message = await receive(harness!, [{ filename: "slow.pdf", size: 1_000_000, stall: true }]);
    const download = adapter.downloadAttachment(
      message,
      only(message),
      limits(10_000_000, controller.signal),
    );
    await expect(download).rejects.toBeInstanceOf(DiscordApiError);
    await expect(download).rejects.toMatchObject({ code: "discord.download_failed", isRetryable: false });
    const [request] = await waitUntil(() => fake.cdnRequests().length === 1 && fake.cdnRequests());
    expect(request?.bytesSent).toBeLessThan(1_000_000);
  });

  it("never fetches a URL off the CDN, nor a path of it that is not an attachment", async () => {
    const calls: string[] = [];
    const counting: typeof fetch = async (input, init) => {
      calls.push(String(input));
      return fetch(input, init);
    };
    const { adapter, fake } = await started(counting);
    const message = await receive(harness!, [{ filename: "a.txt" }]);
    const origin = new URL(fake.apiUrl).origin;
    for (const url of [
      "https://evil.example/attachments/1/2/a.txt",
      `${fake.apiUrl}/v10/users/@me`,
      `${origin}.evil.example/attachments/1/2/a.txt`,
      "not a url",
    ]) {
      const refusal = adapter.downloadAttachment(message, { kind: "file", url }, limits(1024));
      await expect(refusal).rejects.toBeInstanceOf(UserError);
      await expect(refusal).rejects.toMatchObject({ code: "discord.download_refused" });
    }
    expect(calls).toEqual([]);
  });

  it("reports an expired or tampered URL as a failed download with the CDN's status", async () => {
    const { adapter } = await started();
    const message = await receive(harness!, [{ filename: "a.txt" }]);
    const tampered = { ...only(message), url: only(message).url?.replace(/hm=[0-9a-f]+/, "hm=00") };
    await expect(adapter.downloadAttachment(message, tampered, limits(4096))).rejects.toMatchObject({
      code: "discord.download_failed",
      status: 404,
    });
  });

  it("downloads from Discord's CDN with Discord's REST base, and only from the REST origin otherwise", () => {
    expect(discordCdnOrigins("https://discord.com/api")).toEqual([
      "https://cdn.discordapp.com",
      "https://media.discordapp.net",
    ]);
    expect(discordCdnOrigins("https://canary.discord.com/api")).toContain("https://cdn.discordapp.com");
    expect(discordCdnOrigins("http://127.0.0.1:4321/api")).toEqual(["http://127.0.0.1:4321"]);
    expect(discordCdnOrigins("http://discord.com.evil.example/api")).toEqual([
      "http://discord.com.evil.example",
    ]);
  });
});

describe("sending files", () => {
  it("uploads a file with its caption, replying to the question, and the posted file can be downloaded", async () => {
    const { adapter, fake } = await started();
    const question = await receive(harness!, []);
    const bytes = new TextEncoder().encode("name,amount\nmilk,2\n");
    await adapter.sendFile({
      sessionKey: question.sessionKey,
      name: "list.csv",
      bytes,
      contentType: "text/csv",
      caption: "Here is the **list**.",
      inReplyTo: question,
    });
    const [sent] = fake.sent();
    expect(sent).toMatchObject({
      channelId: fake.world.ids.dmChannel,
      content: "Here is the **list**.",
      messageReference: { message_id: question.id },
      files: [{ name: "list.csv", contentType: "text/csv" }],
    });
    expect(new Uint8Array(sent?.files?.[0]?.bytes ?? [])).toEqual(bytes);
    expect(fake.shown()).toMatchObject([{ attachments: ["list.csv"] }]);
    const url = sent?.files?.[0]?.url;
    const back = await adapter.downloadAttachment(question, { kind: "file", url }, limits(1024));
    expect(back.bytes).toEqual(bytes);
  });

  it("sends to a DM session without a question, and a long caption's rest after the file", async () => {
    const { adapter, fake } = await started();
    const question = await receive(harness!, []);
    const caption = `${"First paragraph. ".repeat(100)}\n\n${"Second paragraph. ".repeat(100)}`;
    await adapter.sendFile({
      sessionKey: question.sessionKey,
      name: "report.pdf",
      bytes: new Uint8Array([0x25, 0x50, 0x44, 0x46]),
      contentType: "application/pdf",
      caption,
    });
    const sent = fake.sent();
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatchObject({ files: [{ name: "report.pdf" }] });
    expect(sent[0]?.messageReference).toBeUndefined();
    expect(sent[1]?.files).toBeUndefined();
    expect(sent.map((message) => message.content).join("\n\n")).toBe(caption);
  });

  it("refuses a file over Discord's upload limit with a typed error, before sending anything", async () => {
    const { adapter, fake } = await started();
    const question = await receive(harness!, []);
    const before = fake.requests().length;
    const refusal = adapter.sendFile({
      sessionKey: question.sessionKey,
      name: "video.mp4",
      bytes: new Uint8Array(DISCORD_UPLOAD_LIMIT_BYTES + 1),
      contentType: "video/mp4",
      inReplyTo: question,
    });
    await expect(refusal).rejects.toBeInstanceOf(UserError);
    await expect(refusal).rejects.toMatchObject({
      code: "discord.file_too_large",
      message:
        'The file "video.mp4" (10,485,761 bytes) is larger than Discord takes from a bot: 10 MB (10,485,760 bytes).',
    });
    expect(fake.requests().length).toBe(before);
  });

  it("passes Discord's refusal of an upload on as a send failure", async () => {
    const { adapter, fake } = await started();
    const question = await receive(harness!, []);
    fake.failNext("POST /channels/:id/messages", 413);
    await expect(
      adapter.sendFile({
        sessionKey: question.sessionKey,
        name: "a.txt",
        bytes: new Uint8Array([104, 105]),
        contentType: "text/plain",
      }),
    ).rejects.toMatchObject({ code: "discord.send_failed", status: 413 });
  });
});
