import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import { type FakeDingTalk, startFakeDingTalk, waitUntil } from "@almanac/testkit/dingtalk";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { imageParts, inboxFiles } from "./attachment-helpers.js";
import { dingTalkEnv, startTestServer, type TestServer } from "./test-server.js";

let dingtalk: FakeDingTalk;
let running: TestServer | undefined;

beforeEach(async () => {
  // The SDK prints a few lines with console.info itself (documented in docs/channels/dingtalk.md).
  vi.spyOn(console, "info").mockImplementation(() => {});
  dingtalk = await startFakeDingTalk();
});
afterEach(async () => {
  await running?.close();
  running = undefined;
  await dingtalk.close();
  vi.restoreAllMocks();
});

/** The server against the fake DingTalk (every API on it), with `env` on top. */
async function boot(env: Record<string, string> = {}): Promise<TestServer> {
  running = await startTestServer({
    env: {
      ...dingTalkEnv(dingtalk),
      ALMANAC_DINGTALK_OAPI_BASE_URL: dingtalk.url,
      ...env,
    },
  });
  running.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
  await waitUntil(() => dingtalk.isConnected(), { timeoutMs: 10_000 });
  return running;
}

describe("DingTalk attachments and streamed replies through the real server", () => {
  it("downloads a picture, saves it in the inbox and shows it to a vision model", async () => {
    const server = await boot({ ALMANAC_MODEL_VISION: "true" });
    server.llm.enqueue(script.text("A red square."));
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: "#c82828" } })
      .png()
      .toBuffer();
    dingtalk.addFile("code-photo", { bytes: png, contentType: "image/png" });
    dingtalk.sendRobotMessage({
      conversation: "single",
      media: { type: "picture", downloadCode: "code-photo" },
    });
    await waitUntil(() => dingtalk.sent().length === 1, { timeoutMs: 10_000 });
    expect(dingtalk.sent()[0]).toMatchObject({ route: "sessionWebhook", text: "A red square." });

    const request = server.llm.chatRequests()[0];
    const [image] = imageParts(request);
    expect(image).toMatch(/^data:image\/(png|jpeg);base64,/);
    expect(lastUserText(request)).toMatch(/saved as inbox\/\d{4}-\d{2}-\d{2}\/image\.png; shown below/);
    const files = await inboxFiles(server.home);
    expect(files).toHaveLength(1);
    expect((await readFile(join(server.home, "workspace", "inbox", files[0] ?? ""))).equals(png)).toBe(true);
    expect(dingtalk.downloads()).toEqual([
      expect.objectContaining({ downloadCode: "code-photo", completed: true }),
    ]);
    expect(server.llm.rejections()).toEqual([]);
  });

  it("refuses a 30 MB file politely, and still answers the message", async () => {
    const server = await boot();
    dingtalk.addFile("code-big", { bytes: new Uint8Array(30 * 1024 * 1024), contentType: "application/zip" });
    dingtalk.sendRobotMessage({
      conversation: "single",
      media: { type: "file", downloadCode: "code-big", fileName: "big.zip" },
    });
    await waitUntil(() => dingtalk.sent().length === 1, { timeoutMs: 10_000 });
    const reply = dingtalk.sent()[0]?.text ?? "";
    expect(reply).toMatch(
      /^_I could not take the file "big\.zip": it is larger than 20 MB \(30 MB\)\._\n\necho: /,
    );
    expect(lastUserText(server.llm.chatRequests()[0])).toContain(
      'file "big.zip": not saved, it is larger than 20 MB',
    );
    expect(await inboxFiles(server.home)).toEqual([]);
    expect(dingtalk.downloads()).toEqual([
      expect.objectContaining({ downloadCode: "code-big", completed: false }),
    ]);
  });

  it("streams a reply into the configured AI card, which ends with exactly the final text", async () => {
    const server = await boot({ ALMANAC_DINGTALK_CARD_TEMPLATE_ID: dingtalk.cardTemplateId });
    const answer = Array.from({ length: 20 }, (_, index) => `Line **${index}** of the answer.`).join("\n");
    server.llm.enqueue(script.text(answer, { chunkDelayMs: 30 }));
    dingtalk.sendRobotMessage({ conversation: "single", text: "tell me everything" });
    await waitUntil(() => dingtalk.cards()[0]?.finalized, { timeoutMs: 15_000 });
    const [card] = dingtalk.cards();
    expect(card).toMatchObject({
      content: answer,
      finalized: true,
      spaceType: "IM_ROBOT",
      spaceId: "staff-001",
    });
    const updates = card?.updates ?? [];
    expect(updates.length).toBeGreaterThanOrEqual(3);
    expect(updates.filter((update) => update.isFinalize)).toHaveLength(1);
    for (const [index, update] of updates.entries()) {
      if (index === 0) continue;
      // Arrivals at least a second apart (the adapter counts from the end of the previous write; 5 ms for timers).
      expect(update.at - (updates[index - 1]?.at ?? 0)).toBeGreaterThanOrEqual(995);
      expect(answer.startsWith(update.content)).toBe(true);
    }
    expect(dingtalk.sent()).toEqual([]);
    expect(server.llm.chatRequests()[0]?.stream).toBe(true);
  }, 30_000);
});
