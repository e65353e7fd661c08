import { lastUserText, type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { type FakeFeishu, startFakeFeishu, waitUntil } from "@almanac/testkit/feishu";
import sharp from "sharp";
import { afterEach, describe, expect, it } from "vitest";
import { imageParts, inboxFiles } from "./attachment-helpers.js";
import { startTestServer, TEST_MODEL_KEY, type TestServer } from "./test-server.js";

let feishu: FakeFeishu | undefined;
let running: TestServer | undefined;
let model: ScriptedLlm | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  await model?.close();
  model = undefined;
  await feishu?.close();
  feishu = undefined;
});

/** The server with Feishu on and a scripted model; `envOf` adds settings that name the model server's URL. */
async function start(
  envOf: (modelBaseUrl: string) => Record<string, string> = () => ({}),
): Promise<{ server: TestServer; fake: FakeFeishu }> {
  const fake = await startFakeFeishu();
  feishu = fake;
  const llm = await startScriptedLlm({ contextWindow: 32_000, apiKey: TEST_MODEL_KEY });
  model = llm;
  const server = await startTestServer({
    llm,
    env: {
      ALMANAC_FEISHU_APP_ID: fake.appId,
      ALMANAC_FEISHU_APP_SECRET: fake.appSecret,
      ALMANAC_FEISHU_DOMAIN: fake.baseUrl,
      ALMANAC_FEISHU_ALLOW_FROM: "ou_user_1",
      ...envOf(llm.baseURL),
    },
  });
  running = server;
  await fake.waitForConnection(1, 10_000);
  return { server, fake };
}

/** The Markdown the chat shows now for each of the bot's messages (a card's after its last update). */
function shownTexts(fake: FakeFeishu): string[] {
  return fake.shown().map((message) => {
    const elements: unknown = Reflect.get(Object(message.content), "elements");
    if (Array.isArray(elements)) return String(Reflect.get(Object(elements[0]), "content"));
    const paragraphs: unknown = Reflect.get(Object(Reflect.get(Object(message.content), "zh_cn")), "content");
    return Array.isArray(paragraphs) ? String(Reflect.get(Object(paragraphs[0]?.[0]), "text")) : "";
  });
}

/** Waits until the chat shows a message matching `pattern`; returns its text. */
async function waitForShown(fake: FakeFeishu, pattern: RegExp): Promise<string> {
  await waitUntil(() => shownTexts(fake).some((text) => pattern.test(text)), {
    timeoutMs: 15_000,
    what: `a reply matching ${pattern}`,
  });
  return shownTexts(fake).find((text) => pattern.test(text)) ?? "";
}

const photo = () =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 20, g: 120, b: 220 } } })
    .png()
    .toBuffer();

/** The start of an Ogg/Opus recording, as Feishu's voice messages are: enough for the type check. */
const voiceRecording = new Uint8Array([
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

describe("Feishu attachments and streamed replies through the real server", () => {
  it("a photo reaches a vision model as an image part and is saved in the owner's inbox", async () => {
    const { server, fake } = await start(() => ({ ALMANAC_MODEL_VISION: "true" }));
    server.llm.enqueue(script.text("A blue rectangle."));
    fake.addResource("om_photo", "img_v3_photo", {
      bytes: await photo(),
      type: "image",
      contentType: "image/png",
    });
    fake.sendEvent({ chatType: "p2p", messageId: "om_photo", image: { imageKey: "img_v3_photo" } });
    expect(await waitForShown(fake, /^A blue rectangle\.$/)).toBe("A blue rectangle.");
    const [request] = server.llm.chatRequests();
    expect(imageParts(request)).toHaveLength(1);
    expect(imageParts(request)[0]).toMatch(/^data:image\/(png|jpeg);base64,/);
    expect(lastUserText(request)).toMatch(/saved as inbox\/\d{4}-\d{2}-\d{2}\/image\.png; shown below/);
    expect((await inboxFiles(server.home)).map((file) => file.split("/")[1])).toEqual(["image.png"]);
    const download = fake.requests().find((entry) => entry.path.includes("/resources/img_v3_photo"));
    expect(download).toMatchObject({ path: "/open-apis/im/v1/messages/om_photo/resources/img_v3_photo" });
    expect(download?.query).toEqual({ type: "image" });
  });

  it("with vision off the model gets a note naming the saved photo, never an image part", async () => {
    const { server, fake } = await start();
    server.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
    fake.addResource("om_blind", "img_v3_blind", {
      bytes: await photo(),
      type: "image",
      contentType: "image/png",
    });
    fake.sendEvent({ chatType: "p2p", messageId: "om_blind", image: { imageKey: "img_v3_blind" } });
    await waitForShown(fake, /you cannot see images/);
    const [request] = server.llm.chatRequests();
    expect(imageParts(request)).toEqual([]);
    expect(lastUserText(request)).toMatch(
      /saved as inbox\/\d{4}-\d{2}-\d{2}\/image\.png; you cannot see images/,
    );
  });

  it("a voice message is transcribed, and its transcript is the text the model answers", async () => {
    // The scripted model server answers `POST /v1/audio/transcriptions` too.
    const { server, fake } = await start((baseUrl) => ({
      ALMANAC_TRANSCRIPTION_BASE_URL: baseUrl,
      ALMANAC_TRANSCRIPTION_API_KEY: TEST_MODEL_KEY,
    }));
    server.llm.setFallback((request) => script.text(`heard: ${lastUserText(request)}`));
    fake.addResource("om_voice", "file_v3_voice", {
      bytes: voiceRecording,
      type: "file",
      contentType: "audio/opus",
    });
    fake.sendEvent({
      chatType: "p2p",
      messageId: "om_voice",
      audio: { fileKey: "file_v3_voice", durationMs: 4000 },
    });
    // Streamed: wait for the end of the echo (the note follows the transcript).
    const reply = await waitForShown(fake, /^heard: [\s\S]*its transcript is the text above$/);
    const [transcription] = server.llm.transcriptionRequests();
    expect(transcription?.bytes).toEqual(voiceRecording);
    expect(reply).toContain(`transcript of ${transcription?.fileName}`);
    expect(lastUserText(server.llm.chatRequests()[0])).toMatch(
      /voice message .*its transcript is the text above/s,
    );
  });

  it("a 30 MB file is refused politely above the answer to the rest of the message", async () => {
    const { server, fake } = await start();
    server.llm.setFallback(() => script.text("Noted."));
    fake.addResource("om_big", "file_v3_big", {
      bytes: new Uint8Array(30 * 1024 * 1024),
      type: "file",
      contentType: "application/zip",
      fileName: "big.zip",
    });
    fake.sendEvent({
      chatType: "p2p",
      messageId: "om_big",
      file: { fileKey: "file_v3_big", fileName: "big.zip" },
    });
    const reply = await waitForShown(fake, /Noted\./);
    expect(reply).toBe('_I could not take the file "big.zip": it is larger than 20 MB (30 MB)._\n\nNoted.');
    expect(await inboxFiles(server.home)).toEqual([]);
  });

  it("a streamed reply is shown in a card edited at most once a second, ending with exactly the reply", async () => {
    const { server, fake } = await start();
    const reply = Array.from({ length: 40 }, (_, index) => `Sentence number ${index} of a long answer.`).join(
      " ",
    );
    server.llm.enqueue(script.text(reply, { chunkDelayMs: 10 }));
    fake.sendEvent({ chatType: "p2p", text: "tell me a long story" });
    await waitUntil(() => shownTexts(fake)[0] === reply, { timeoutMs: 10_000, what: "the final card" });
    const cards = fake.sent().filter((message) => message.msgType === "interactive");
    expect(cards).toHaveLength(1);
    expect(fake.sent()).toHaveLength(1);
    const updates = fake.cardUpdates();
    expect(updates.length).toBeGreaterThanOrEqual(1);
    expect(updates.every((update) => update.accepted)).toBe(true);
    for (const [index, update] of updates.entries()) {
      const previous = updates[index - 1];
      if (previous !== undefined) expect(update.at - previous.at).toBeGreaterThanOrEqual(990);
    }
  }, 30_000);
});
