import { join } from "node:path";
import { lastUserText, type RecordedChatRequest, script } from "@almanac/testkit";
import type { Browser, BrowserContext, Page } from "playwright-core";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ARTIFACT_DIR,
  ensureConsoleBuilt,
  launchChromium,
  logIn,
  openConversation,
} from "./browser-console.js";
import { startTestServer, TEST_TOKEN, type TestServer } from "./test-server.js";

/** A short valid WAV recording (8 kHz mono, 16-bit silence), as a voice message could be. */
function wavRecording(samples = 800): Buffer {
  const data = samples * 2;
  const header = Buffer.alloc(44);
  header.write("RIFF", 0, "ascii");
  header.writeUInt32LE(36 + data, 4);
  header.write("WAVEfmt ", 8, "ascii");
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write("data", 36, "ascii");
  header.writeUInt32LE(data, 40);
  return Buffer.concat([header, Buffer.alloc(data)]);
}

/** The inbox path of the last image the person sent, as the note in the model's request names it. */
function lastSavedImage(request: RecordedChatRequest): string | undefined {
  const texts = JSON.stringify(request.messages);
  return [...texts.matchAll(/saved as (inbox\/\d{4}-\d{2}-\d{2}\/[^;"\\]+\.png)/g)].at(-1)?.[1];
}

/** Pastes files into the composer as the clipboard would (a screenshot pasted with Ctrl+V). */
async function paste(page: Page, files: ReadonlyArray<{ name: string; type: string; base64: string }>) {
  await page.locator("textarea[name=message]").evaluate((textarea, pasted) => {
    const data = new DataTransfer();
    for (const file of pasted)
      data.items.add(
        new File([Uint8Array.from(atob(file.base64), (character) => character.charCodeAt(0))], file.name, {
          type: file.type,
        }),
      );
    textarea.dispatchEvent(
      new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }),
    );
  }, files);
}

/** Drops files on the conversation as a drag from the desktop would. */
async function drop(page: Page, files: ReadonlyArray<{ name: string; type: string; base64: string }>) {
  await page.locator(".chat-log").evaluate((log, dropped) => {
    const data = new DataTransfer();
    for (const file of dropped)
      data.items.add(
        new File([Uint8Array.from(atob(file.base64), (character) => character.charCodeAt(0))], file.name, {
          type: file.type,
        }),
      );
    log.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
    log.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
  }, files);
}

/** Resolves once every image of the locator has loaded, with the sources they were drawn from. */
async function drawnImages(page: Page, selector: string): Promise<Array<{ src: string; width: number }>> {
  await page.waitForFunction(
    (css) => {
      const images = Array.from(document.querySelectorAll<HTMLImageElement>(css));
      return images.length > 0 && images.every((image) => image.complete && image.naturalWidth > 0);
    },
    selector,
    { timeout: 15_000 },
  );
  return page.locator(selector).evaluateAll((images) =>
    images.map((image) => ({
      src: (image as HTMLImageElement).src,
      width: (image as HTMLImageElement).naturalWidth,
    })),
  );
}

describe("console: files in the chat, in a real browser", () => {
  let running: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let png: Buffer;
  const fileRequests: Array<{ url: string; authorized: boolean }> = [];
  const errors: string[] = [];

  beforeAll(async () => {
    ensureConsoleBuilt();
    browser = await launchChromium();
    running = await startTestServer();
    png = await sharp({ create: { width: 40, height: 30, channels: 3, background: "#d33" } })
      .png()
      .toBuffer();
    running.llm.setFallback((request) => {
      if (request.messages.at(-1)?.role === "tool") return script.text("There it is.");
      const image = lastSavedImage(request);
      if (lastUserText(request).startsWith("send it back") && image !== undefined)
        return script.toolCalls([{ name: "send_file", arguments: { path: image, caption: "your picture" } }]);
      return script.text("Got your files.");
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    context.setDefaultTimeout(15_000);
    await context.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { cspViolations: string[] }).cspViolations = seen;
      document.addEventListener("securitypolicyviolation", (event) =>
        seen.push(`${event.effectiveDirective} ${event.blockedURI}`),
      );
    });
    page = await context.newPage();
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/api/files/content")
        fileRequests.push({
          url: request.url(),
          authorized: request.headers().authorization === `Bearer ${TEST_TOKEN}`,
        });
    });
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    page.on("pageerror", (error) => errors.push(String(error)));
    await logIn(page, running.server.url, TEST_TOKEN);
  }, 180_000);
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await running?.close();
  });

  it("sends a pasted image, a dropped file and a picked recording, and shows them in the conversation", async () => {
    await openConversation(page, running.server.url, "files");
    await paste(page, [{ name: "image.png", type: "image/png", base64: png.toString("base64") }]);
    await drop(page, [
      { name: "notes.txt", type: "text/plain", base64: Buffer.from("milk\n").toString("base64") },
    ]);
    await page.locator("input.attach-input").setInputFiles({
      name: "voice.wav",
      mimeType: "audio/wav",
      buffer: wavRecording(),
    });
    const chips = page.getByRole("list", { name: "Files to send" });
    await expect
      .poll(() => chips.getByRole("listitem").allTextContents())
      .toEqual([
        expect.stringContaining("image.png"),
        expect.stringContaining("notes.txt"),
        expect.stringContaining("voice.wav"),
      ]);
    // One taken off again before sending.
    await page
      .locator("input.attach-input")
      .setInputFiles({ name: "oops.txt", mimeType: "text/plain", buffer: Buffer.from("x") });
    await chips.getByRole("button", { name: "Remove oops.txt" }).click();
    await expect.poll(() => chips.getByRole("listitem").count()).toBe(3);

    await page.fill("textarea[name=message]", "here are my files");
    await page.keyboard.press("Enter");
    await page.locator(".bubble.assistant:not(.streaming)").getByText("Got your files.").waitFor();
    await expect(chips.count()).resolves.toBe(0);
    const user = page.locator(".bubble.user").last();
    await user.getByText("here are my files").waitFor();
    const [local] = await drawnImages(page, ".bubble.user .chat-image");
    expect(local?.src).toMatch(/^blob:/);

    // What the server saved: each file in the conversation's inbox, by its content.
    const request = running.llm.chatRequests().at(-1);
    expect(lastUserText(request)).toMatch(
      /image "image\.png" \(image\/png, .*\), saved as inbox\/[\d-]+\/image\.png/,
    );
    expect(lastUserText(request)).toMatch(
      /file "notes\.txt" \(text\/plain, 5 B\), saved as inbox\/[\d-]+\/notes\.txt/,
    );
    expect(lastUserText(request)).toMatch(/saved as inbox\/[\d-]+\/voice\.wav/);

    // After a reload the conversation comes from the server: every file fetched with the token, as blob: URLs.
    fileRequests.length = 0;
    await openConversation(page, running.server.url, "files");
    const reloaded = page.locator(".bubble.user").last();
    await reloaded.getByText("here are my files").waitFor();
    const [saved] = await drawnImages(page, ".bubble.user .chat-image");
    expect(saved).toMatchObject({ src: expect.stringMatching(/^blob:/), width: 40 });
    await reloaded.locator("audio.chat-audio[src^='blob:']").waitFor();
    await expect(reloaded.locator(".bubble-text").textContent()).resolves.toBe("here are my files");
    const download = page.waitForEvent("download");
    await reloaded.getByRole("button", { name: "notes.txt" }).click();
    expect((await download).suggestedFilename()).toBe("notes.txt");
    expect(fileRequests.length).toBeGreaterThanOrEqual(3);
    expect(fileRequests.every((request) => request.authorized)).toBe(true);
    await page.screenshot({ path: join(ARTIFACT_DIR, "chat-files.png") });
  });

  it("shows a file the assistant sent with send_file in its reply, live and after a reload", async () => {
    await openConversation(page, running.server.url, "files");
    await page.fill("textarea[name=message]", "send it back please");
    await page.keyboard.press("Enter");
    const reply = page.locator(".bubble.assistant:not(.streaming)").last();
    await reply.getByText("There it is.").waitFor();
    await reply.locator("figcaption").getByText("your picture").waitFor();
    const [live] = await drawnImages(page, ".bubble.assistant .chat-image");
    expect(live).toMatchObject({ src: expect.stringMatching(/^blob:/), width: 40 });

    await page.reload();
    await page.locator("textarea[name=message]:enabled").waitFor();
    const again = page.locator(".bubble.assistant").last();
    await again.getByText("There it is.").waitFor();
    await again.locator("figcaption").getByText("your picture").waitFor();
    await drawnImages(page, ".bubble.assistant .chat-image");
    // The call itself is not shown as text.
    await expect(page.locator(".chat-log").textContent()).resolves.not.toContain("send_file");
  });

  it("runs under the server's Content-Security-Policy with no violation, and never hot-links a file", async () => {
    const response = await page.goto(`${running.server.url}/chat?conversation=files`);
    const policy = (await response?.headerValue("content-security-policy")) ?? "";
    expect(policy).toContain("img-src 'self' data: blob:");
    expect(policy).toContain("media-src 'self' blob:");
    await page.locator(".bubble.assistant .chat-image").first().waitFor();
    await drawnImages(page, ".chat-image");
    const sources = await page
      .locator(".chat-log img, .chat-log audio")
      .evaluateAll((elements) => elements.map((element) => (element as HTMLImageElement).src));
    expect(sources.length).toBeGreaterThan(0);
    expect(sources.every((source) => source.startsWith("blob:"))).toBe(true);
    expect(
      await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations),
    ).toEqual([]);
    expect(errors.filter((text) => /content security policy|refused to/i.test(text))).toEqual([]);
  });
});
