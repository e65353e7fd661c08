import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import sharp from "sharp";
import { afterEach, describe, expect, it } from "vitest";
import { imageParts, inboxFiles } from "./attachment-helpers.js";
import { startTestServer, type TestServer } from "./test-server.js";

let discord: FakeDiscord | undefined;
let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  await discord?.close();
  discord = undefined;
});

/** A fake Discord and the real server on it, the world's user allowed in DMs; replies stream (the default). */
async function boot(env: Record<string, string> = {}): Promise<{ fake: FakeDiscord; server: TestServer }> {
  const fake = await startFakeDiscord();
  discord = fake;
  const server = await startTestServer({
    env: {
      ALMANAC_DISCORD_TOKEN: fake.token(),
      ALMANAC_DISCORD_API_BASE_URL: fake.apiUrl,
      ALMANAC_DISCORD_ALLOW_FROM: fake.world.user.id,
      ...env,
    },
  });
  running = server;
  await waitUntil(() => fake.activeConnections() === 1, { timeoutMs: 10_000 });
  return { fake, server };
}

/** The bot's messages in the DM as the person sees them now, once `done` says they are complete. */
function shownInDm(
  fake: FakeDiscord,
  done: (texts: readonly string[]) => boolean,
): Promise<readonly string[]> {
  return waitUntil(
    () => {
      const texts = fake.shown(fake.world.ids.dmChannel).map((message) => message.content);
      return done(texts) && texts;
    },
    { timeoutMs: 15_000, what: "the reply to show its final text" },
  );
}

async function photo(): Promise<Buffer> {
  return sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 200, g: 40, b: 40 } } })
    .png()
    .toBuffer();
}

describe("Discord attachments and streamed replies through the real server", () => {
  it("vision on: a photo sent in a DM is downloaded, saved in the inbox and shown to the model", async () => {
    const { fake, server } = await boot({ ALMANAC_MODEL_VISION: "true" });
    server.llm.enqueue(script.text("A red rectangle."));
    const bytes = await photo();
    fake.dispatchMessage({
      where: "dm",
      content: "what is this?",
      attachments: [{ filename: "photo.png", contentType: "image/png", bytes }],
    });
    expect(await shownInDm(fake, (texts) => texts[0] === "A red rectangle.")).toEqual(["A red rectangle."]);

    const request = server.llm.chatRequests()[0];
    const [image] = imageParts(request);
    expect(image?.startsWith("data:image/")).toBe(true);
    expect(lastUserText(request)).toMatch(
      /^what is this\?[\s\S]*image "photo\.png" \(image\/png, [\d.]+ K?B\), saved as inbox\/\d{4}-\d{2}-\d{2}\/photo\.png; shown below/,
    );
    const files = await inboxFiles(server.home);
    expect(files).toEqual([expect.stringMatching(/^\d{4}-\d{2}-\d{2}\/photo\.png$/)]);
    expect(await readFile(join(server.home, "workspace", "inbox", files[0] ?? ""))).toEqual(bytes);
    // Fetched from the CDN URL in the message, without the bot token.
    expect(fake.cdnRequests()).toMatchObject([{ status: 200, authorization: false }]);
    expect(server.llm.rejections()).toEqual([]);
  });

  it("vision off: the model gets a note naming the saved photo and never an image part", async () => {
    const { fake, server } = await boot();
    server.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
    fake.dispatchMessage({
      where: "dm",
      content: "",
      attachments: [{ filename: "photo.png", contentType: "image/png", bytes: await photo() }],
    });
    await shownInDm(
      fake,
      (texts) => texts.length === 1 && texts[0]?.includes("you cannot see images") === true,
    );
    const request = server.llm.chatRequests()[0];
    expect(imageParts(request)).toEqual([]);
    expect(JSON.stringify(request?.messages)).not.toContain("image_url");
    expect(lastUserText(request)).toMatch(
      /image "photo\.png" \(image\/png, [\d.]+ K?B\), saved as inbox\/\d{4}-\d{2}-\d{2}\/photo\.png; you cannot see images/,
    );
    expect(await inboxFiles(server.home)).toHaveLength(1);
  });

  it("refuses a 30 MB file politely without downloading it, and answers the rest of the message", async () => {
    const { fake, server } = await boot();
    server.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
    fake.dispatchMessage({
      where: "dm",
      content: "what is 2+2?",
      attachments: [{ filename: "big.zip", contentType: "application/zip", size: 30 * 1024 * 1024 }],
    });
    const request = await waitUntil(() => server.llm.chatRequests()[0], { timeoutMs: 10_000 });
    const final = `_I could not take the file "big.zip": it is larger than 20 MB (30 MB)._\n\necho: ${lastUserText(request)}`;
    expect(await shownInDm(fake, (texts) => texts[0] === final)).toEqual([final]);
    expect(lastUserText(request)).toMatch(
      /^what is 2\+2\?[\s\S]*"big\.zip": not saved, it is larger than 20 MB/,
    );
    expect(fake.cdnRequests()).toEqual([]);
    expect(await inboxFiles(server.home)).toEqual([]);
  });

  it("streams a slow reply: posted after a second, edited about once a second, ending with exactly the final text", async () => {
    const { fake, server } = await boot();
    const final = `${"Streaming shows the answer while the model is still writing it. ".repeat(20).trim()} The end!`;
    server.llm.enqueue(script.text(final, { chunkDelayMs: 15 }));
    fake.dispatchMessage({ where: "dm", content: "tell me slowly" });
    expect(await shownInDm(fake, (texts) => texts[0] === final)).toEqual([final]);

    expect(fake.sent()).toHaveLength(1);
    const edits = fake.edits();
    expect(edits.length).toBeGreaterThanOrEqual(2);
    expect(edits.at(-1)?.content).toBe(final);
    for (const [index, edit] of edits.entries()) {
      expect(final.startsWith(edit.content)).toBe(true);
      // The pace is kept when each edit is sent; arrival times carry a few milliseconds of jitter.
      if (index > 0) expect(edit.at - (edits[index - 1]?.at ?? 0)).toBeGreaterThanOrEqual(950);
    }
  }, 30_000);

  it("continues a streamed reply past 2,000 characters in a second message, code block intact", async () => {
    const { fake, server } = await boot();
    const code = Array.from({ length: 25 }, (_, line) => `const value${line} = compute(${line});`);
    const final = [
      "This paragraph explains the change in detail before the code. ".repeat(24).trim(),
      `\`\`\`ts\n${code.join("\n")}\n\`\`\``,
      "And this paragraph says what to do next, after the code block. ".repeat(12).trim(),
    ].join("\n\n");
    server.llm.enqueue(script.text(final, { chunkDelayMs: 3 }));
    fake.dispatchMessage({ where: "dm", content: "a long one" });
    const shown = await shownInDm(fake, (texts) => texts.join("\n\n") === final);
    expect(shown).toHaveLength(2);
    for (const text of shown) {
      expect(text.length).toBeLessThanOrEqual(2000);
      expect((text.match(/```/g) ?? []).length % 2).toBe(0);
    }
    expect(fake.deletions()).toEqual([]);
  }, 30_000);
});
